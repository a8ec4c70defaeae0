/// A SQL statement whose interpolated values become bind parameters (`$1, $2 …`), never SQL text.
///
///     let q: PostgresQuery = "SELECT data FROM events WHERE stream_name = \(stream) AND position > \(from)"
///
/// Identifiers chosen by code (never by input) go in with `\(identifier: "visits_shadow")`.
public struct PostgresQuery: ExpressibleByStringInterpolation, Sendable, CustomStringConvertible {
    public var sql: String
    public var binds: [String?]

    public init(sql: String, binds: [String?] = []) {
        self.sql = sql
        self.binds = binds
    }

    public init(stringLiteral value: String) {
        self.init(sql: value)
    }

    public init(stringInterpolation: StringInterpolation) {
        self.init(sql: stringInterpolation.sql, binds: stringInterpolation.binds)
    }

    public var description: String { sql }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        public mutating func appendInterpolation<T: PostgresEncodable>(_ value: T) {
            binds.append(value.postgresText)
            sql += "$\(binds.count)"
        }

        public mutating func appendInterpolation<T: PostgresEncodable>(_ value: T?) {
            binds.append(value?.postgresText)
            sql += "$\(binds.count)"
        }

        /// A SQL identifier chosen by the program (a table name). Quoted; never pass user input.
        public mutating func appendInterpolation(identifier: String) {
            sql += "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
    }
}

/// A value that travels to PostgreSQL as a text-format bind parameter.
public protocol PostgresEncodable: Sendable {
    var postgresText: String { get }
}

extension String: PostgresEncodable { public var postgresText: String { self } }
extension Substring: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int64: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int32: PostgresEncodable { public var postgresText: String { String(self) } }
extension UInt64: PostgresEncodable { public var postgresText: String { String(self) } }
extension Double: PostgresEncodable {
    public var postgresText: String { self.isFinite ? String(self) : (self.isNaN ? "NaN" : (self > 0 ? "Infinity" : "-Infinity")) }
}
extension Bool: PostgresEncodable { public var postgresText: String { self ? "t" : "f" } }

/// A PostgreSQL array literal (`{"a","b"}`), for `unnest($1::text[])` batch statements.
extension Array: PostgresEncodable where Element: PostgresEncodable {
    public var postgresText: String { PostgresArrayLiteral.encode(self.lazy.map { Optional($0.postgresText) }) }
}

/// An optional element inside an array literal (`NULL` for nil).
public struct PostgresNullableArray<Element: PostgresEncodable>: PostgresEncodable {
    public let elements: [Element?]
    public init(_ elements: [Element?]) { self.elements = elements }
    public var postgresText: String { PostgresArrayLiteral.encode(elements.lazy.map { $0?.postgresText }) }
}

/// Builds array literals byte by byte (batches carry megabytes of JSON; this is on the replay's hot path).
enum PostgresArrayLiteral {
    static func encode(_ elements: some Sequence<String?>) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        for element in elements {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            guard let element else {
                out.append(contentsOf: "NULL".utf8)
                continue
            }
            out.append(UInt8(ascii: "\""))
            var text = element
            text.withUTF8 { bytes in
                for byte in bytes {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                    out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
