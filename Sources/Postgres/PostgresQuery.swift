/// A SQL statement whose interpolated values become bind parameters (`$1, $2 …`), never SQL text.
///
///     let q: PostgresQuery = "SELECT data FROM events WHERE stream_name = \(stream) AND position > \(from)"
///
/// Identifiers chosen by code (never by input) go in with `\(identifier: "visits_shadow")`.
public struct PostgresQuery: ExpressibleByStringInterpolation, Sendable, CustomStringConvertible {
    public var sql: String
    public var binds: [PostgresBind]
    /// How PostgreSQL plans this statement (`plan_cache_mode`, set for this statement alone).
    public var planning = Planning.chosenByServer

    /// `plan_cache_mode` for one statement. A batch statement over arrays is where PostgreSQL's own choice
    /// goes wrong: a generic plan takes every array for ten elements, a custom plan sees their lengths.
    public enum Planning: Sendable, Equatable {
        /// PostgreSQL's choice (`auto`): custom plans for the first executions, then generic if no costlier.
        case chosenByServer
        /// A generic plan, made once per connection: for a statement whose planning is costly and whose plan
        /// holds whatever the values (`plannedOnce()`). It is made with sequential scans off
        /// (`enable_seqscan`, and without JIT: `setting`), so that it probes its tables by their indexes whatever
        /// their size when it was made: a plan made while a table was nearly empty (the outbox's queue at
        /// start-up) otherwise scanned the whole table at every probe as it filled, until an `ANALYZE` of it
        /// replaced the plan.
        case once
        /// As `once`, and made without bitmap scans either (`plannedOnceAlongIndexes()`): for a statement that
        /// reads the open rows of a queue whose rows leave it fast. Their index keeps an entry for every row gone
        /// until VACUUM; an index scan marks such an entry dead the first time it visits it and skips it after,
        /// a bitmap scan never does and visits the table for all of them at every execution.
        case onceAlongIndexes
        /// A custom plan at every execution: for a statement whose best plan depends on how many values its
        /// arrays hold (`plannedForItsValues()`).
        case forItsValues

        var mode: String {
            switch self {
            case .chosenByServer: "auto"
            case .once, .onceAlongIndexes: "force_generic_plan"
            case .forItsValues: "force_custom_plan"
            }
        }

        /// Whether its plans are made with other scans than the server's choice.
        var setsScans: Bool { self == .once || self == .onceAlongIndexes }
    }

    public init(sql: String, binds: [PostgresBind] = []) {
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

    /// This statement, planned once per connection (`Planning.once`).
    public func plannedOnce() -> PostgresQuery {
        var query = self
        query.planning = .once
        return query
    }

    /// This statement, planned once per connection without bitmap scans (`Planning.onceAlongIndexes`).
    public func plannedOnceAlongIndexes() -> PostgresQuery {
        var query = self
        query.planning = .onceAlongIndexes
        return query
    }

    /// This statement, planned at every execution for its values (`Planning.forItsValues`).
    public func plannedForItsValues() -> PostgresQuery {
        var query = self
        query.planning = .forItsValues
        return query
    }

    /// `queries` with the session's `plan_cache_mode` set before each statement whose planning differs from the
    /// mode in force (`current`, nil when unknown), where each of `queries` went, and the mode in force after
    /// them. Nothing is added when every statement runs under the mode already in force — the common case of a
    /// connection that serves the same statements again and again.
    static func withSessionPlanModes(
        _ queries: [PostgresQuery], from current: Planning?, defaults: PlannerDefaults = .init()
    ) -> (queries: [PostgresQuery], positions: [Int], after: Planning?) {
        settingModes(queries, from: current, forTheSession: true, defaults: defaults)
    }

    /// `queries` with a transaction-local `plan_cache_mode` set before each statement planned otherwise than
    /// by the server's choice, and given back after, and where each of `queries` went.
    static func withPlanModes(_ queries: [PostgresQuery], defaults: PlannerDefaults = .init()) -> (
        queries: [PostgresQuery], positions: [Int]
    ) {
        var (out, positions, after) = settingModes(queries, from: .chosenByServer, forTheSession: false, defaults: defaults)
        if after != .chosenByServer { out.append(setting(.chosenByServer, defaults: defaults)) }
        return (out, positions)
    }

    /// The one walk of both: a setting before each statement whose planning differs from the mode in force.
    private static func settingModes(
        _ queries: [PostgresQuery], from current: Planning?, forTheSession: Bool, defaults: PlannerDefaults
    ) -> (
        queries: [PostgresQuery], positions: [Int], after: Planning?
    ) {
        var out: [PostgresQuery] = []
        var positions: [Int] = []
        var current = current
        for query in queries {
            if query.plannedDifferently(from: current) {
                out.append(setting(query.planning, forTheSession: forTheSession, defaults: defaults))
                current = query.planning
            }
            positions.append(out.count)
            out.append(query)
        }
        return (out, positions, current)
    }

    /// Whether this statement must run under other settings than those of `mode`. A statement without
    /// parameters needs no `plan_cache_mode` (PostgreSQL has nothing to plan it for, and plans it once whatever
    /// the mode), but it is planned with other scans than the server's only when it is flagged so itself (`once`,
    /// `onceAlongIndexes`): after such a statement (or where the settings are unknown) it sets the server's
    /// choice back.
    func plannedDifferently(from mode: Planning?) -> Bool {
        guard binds.isEmpty else { return planning != mode }
        guard let mode else { return true }
        return planning.setsScans ? mode != planning : mode.setsScans
    }

    /// What `enable_seqscan`, `enable_bitmapscan` and `jit` are for a session when nothing set them (the server's
    /// or the role's configuration): what statements not planned `once` are planned under.
    public struct PlannerDefaults: Sendable, Equatable {
        public var sequentialScans = "on"
        public var bitmapScans = "on"
        public var jit = "on"
        public init() {}
    }

    /// The settings of `planning`: its `plan_cache_mode`; for `once`, sequential scans off and no JIT (a plan
    /// with a scan left that has no index to take instead, a transition table, is costed past `jit_above_cost`
    /// with sequential scans off, and was compiled at every execution), and for `onceAlongIndexes` bitmap scans
    /// off too; for the others, those three as `defaults`.
    static func setting(_ planning: Planning, forTheSession: Bool = false, defaults: PlannerDefaults = .init())
        -> PostgresQuery
    {
        let local = !forTheSession
        let once = planning.setsScans
        return """
            SELECT set_config('plan_cache_mode', \(planning.mode), \(local)),
                   set_config('enable_seqscan', \(once ? "off" : defaults.sequentialScans), \(local)),
                   set_config('enable_bitmapscan', \(planning == .onceAlongIndexes ? "off" : defaults.bitmapScans), \(local)),
                   set_config('jit', \(once ? "off" : defaults.jit), \(local))
            """
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [PostgresBind] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        public mutating func appendInterpolation<T: PostgresEncodable>(_ value: T) {
            binds.append(value.postgresBind)
            sql += "$\(binds.count)"
        }

        public mutating func appendInterpolation<T: PostgresEncodable>(_ value: T?) {
            binds.append(value?.postgresBind ?? nil)
            sql += "$\(binds.count)"
        }

        /// Another query spliced in as SQL: its text goes in, its binds follow this query's, and its
        /// placeholders are renumbered to match (`$1` of the fragment becomes `$n+1` here). Build a
        /// statement from parts this way instead of counting parameters by hand.
        ///
        ///     let owner: PostgresQuery = "customer_id = \(customerId)"
        ///     let q: PostgresQuery = "SELECT * FROM tokens WHERE \(owner) AND retired_at_ms IS NULL"
        public mutating func appendInterpolation(_ fragment: PostgresQuery) {
            sql += PostgresQuery.renumbered(fragment.sql, by: binds.count)
            binds += fragment.binds
        }

        /// A SQL identifier chosen by the program (a table name). Quoted; never pass user input.
        public mutating func appendInterpolation(identifier: String) {
            sql += "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
    }
}

extension PostgresQuery {
    /// `sql` with every parameter placeholder `$n` turned into `$(n + offset)`. Placeholders are found as
    /// PostgreSQL's lexer finds them: not inside string literals (`'…'`, `E'…'` with its backslash
    /// escapes), quoted identifiers, dollar-quoted bodies (`$$…$$`, `$tag$…$tag$`) or comments, and not
    /// as part of an identifier (`a$1`).
    static func renumbered(_ sql: String, by offset: Int) -> String {
        guard offset > 0 else { return sql }
        let text = Array(sql.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.count + 8)
        var i = 0
        func isIdentifier(_ byte: UInt8) -> Bool {
            (byte >= 97 && byte <= 122) || (byte >= 65 && byte <= 90) || (byte >= 48 && byte <= 57) || byte == 95 || byte == 36
                || byte >= 0x80
        }
        func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
        /// Copies up to and including the first `terminator` from `i` (the opening byte already copied).
        func copyQuoted(_ quote: UInt8, backslashEscapes: Bool) {
            while i < text.count {
                let byte = text[i]
                out.append(byte)
                i += 1
                if backslashEscapes && byte == UInt8(ascii: "\\"), i < text.count {
                    out.append(text[i])
                    i += 1
                } else if byte == quote {
                    // A doubled quote is an escaped one: stay inside.
                    if i < text.count && text[i] == quote {
                        out.append(quote)
                        i += 1
                    } else {
                        return
                    }
                }
            }
        }
        while i < text.count {
            let byte = text[i]
            let previous: UInt8? = i > 0 ? text[i - 1] : nil
            switch byte {
            case UInt8(ascii: "'"):
                let escapes =
                    previous.map { ($0 == UInt8(ascii: "E") || $0 == UInt8(ascii: "e")) } ?? false
                    && (i < 2 || !isIdentifier(text[i - 2]))
                out.append(byte)
                i += 1
                copyQuoted(UInt8(ascii: "'"), backslashEscapes: escapes)
            case UInt8(ascii: "\""):
                out.append(byte)
                i += 1
                copyQuoted(UInt8(ascii: "\""), backslashEscapes: false)
            case UInt8(ascii: "-") where i + 1 < text.count && text[i + 1] == UInt8(ascii: "-"):
                while i < text.count && text[i] != UInt8(ascii: "\n") {
                    out.append(text[i])
                    i += 1
                }
            case UInt8(ascii: "/") where i + 1 < text.count && text[i + 1] == UInt8(ascii: "*"):
                // Block comments nest in PostgreSQL.
                var depth = 0
                repeat {
                    if text[i] == UInt8(ascii: "/") && i + 1 < text.count && text[i + 1] == UInt8(ascii: "*") {
                        depth += 1
                        out += [text[i], text[i + 1]]
                        i += 2
                    } else if text[i] == UInt8(ascii: "*") && i + 1 < text.count && text[i + 1] == UInt8(ascii: "/") {
                        depth -= 1
                        out += [text[i], text[i + 1]]
                        i += 2
                    } else {
                        out.append(text[i])
                        i += 1
                    }
                } while depth > 0 && i < text.count
            case UInt8(ascii: "$") where previous.map(isIdentifier) != true:
                if i + 1 < text.count && isDigit(text[i + 1]) {
                    var j = i + 1
                    var number = 0
                    while j < text.count && isDigit(text[j]) {
                        number = number * 10 + Int(text[j] - 48)
                        j += 1
                    }
                    out.append(byte)
                    out += Array(String(number + offset).utf8)
                    i = j
                } else if let tagEnd = text[(i + 1)...].firstIndex(where: { !isIdentifier($0) || $0 == UInt8(ascii: "$") }),
                    text[tagEnd] == UInt8(ascii: "$")
                {
                    // A dollar-quoted body: copy through the closing tag.
                    let tag = Array(text[i...tagEnd])
                    out += tag
                    i = tagEnd + 1
                    while i < text.count {
                        if text[i] == UInt8(ascii: "$") && text[i...].starts(with: tag) {
                            out += tag
                            i += tag.count
                            break
                        }
                        out.append(text[i])
                        i += 1
                    }
                } else {
                    out.append(byte)
                    i += 1
                }
            default:
                out.append(byte)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A value that travels to PostgreSQL as a bind parameter: as text unless it says otherwise (`postgresBind`).
public protocol PostgresEncodable: Sendable {
    var postgresText: String { get }
    /// How it is sent: `.text(postgresText)` unless the type sends itself in binary (`PostgresBinaryArray`).
    var postgresBind: PostgresBind { get }
}

extension PostgresEncodable {
    public var postgresBind: PostgresBind { .text(postgresText) }
}

extension String: PostgresEncodable { public var postgresText: String { self } }
extension Substring: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int64: PostgresEncodable { public var postgresText: String { String(self) } }
extension Int32: PostgresEncodable { public var postgresText: String { String(self) } }
extension UInt64: PostgresEncodable { public var postgresText: String { String(self) } }
extension Double: PostgresEncodable {
    public var postgresText: String {
        self.isFinite ? String(self) : (self.isNaN ? "NaN" : (self > 0 ? "Infinity" : "-Infinity"))
    }
}
extension Bool: PostgresEncodable { public var postgresText: String { self ? "t" : "f" } }

/// A PostgreSQL array literal (`{"a","b"}`), for `unnest($1::text[])` batch statements.
///
/// The elements' texts are gathered into a concrete array first: this conformance runs unspecialized (the
/// statement builders reach it through `PostgresEncodable`), and a lazy map over a generic element would
/// ask the runtime for its iterator's type metadata at every element of every batch.
extension Array: PostgresEncodable where Element: PostgresEncodable {
    public var postgresText: String {
        var texts: [String?] = []
        texts.reserveCapacity(count)
        for element in self { texts.append(element.postgresText) }
        return PostgresArrayLiteral.encode(texts)
    }
}

/// An optional element inside an array literal (`NULL` for nil).
public struct PostgresNullableArray<Element: PostgresEncodable>: PostgresEncodable {
    public let elements: [Element?]
    public init(_ elements: [Element?]) { self.elements = elements }
    public var postgresText: String {
        var texts: [String?] = []
        texts.reserveCapacity(elements.count)
        for element in elements { texts.append(element?.postgresText) }
        return PostgresArrayLiteral.encode(texts)
    }
}

/// Builds array literals byte by byte (batches carry megabytes of JSON; this is on the replay's hot path).
enum PostgresArrayLiteral {
    static func encode(_ elements: [String?]) -> String {
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
                // Runs between the bytes to escape are copied whole (JSON text is mostly such runs). No
                // `reserveCapacity` here: it grows to exactly what it is asked, so one per element copied the
                // whole literal again for each element; `append(contentsOf:)` grows geometrically.
                var start = 0
                for (i, byte) in bytes.enumerated() where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
                    out.append(UInt8(ascii: "\\"))
                    start = i
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
