/// One bind parameter of a statement: text, whose type PostgreSQL infers from the statement (NULL when nil), or
/// binary, sent with its type.
public enum PostgresBind: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByNilLiteral {
    case text(String?)
    /// PostgreSQL's binary format of a value of type `type` (an OID, declared as the parameter's type: the
    /// statement may cast it, as it would a typed value).
    case binary(type: UInt32, bytes: [UInt8])

    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .text(nil) }

    /// The parameter type declared for it: 0 (inferred) for text.
    var declaredType: UInt32 {
        switch self {
        case .text: 0
        case .binary(let type, _): type
        }
    }
}

/// A value that goes into an array sent in binary (`PostgresBinaryArray`): its element type and its bytes.
public protocol PostgresBinaryElement: Sendable {
    /// The OID of the array type of this element type (`text[]` for `String`).
    static var postgresArrayType: UInt32 { get }
    /// The OID of this element type.
    static var postgresElementType: UInt32 { get }
    /// Appends the value in PostgreSQL's binary format (without its length).
    func appendPostgresBinary(to bytes: inout [UInt8])
}

extension String: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1009 }
    public static var postgresElementType: UInt32 { 25 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { bytes.append(contentsOf: utf8) }
}

extension Int64: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1016 }
    public static var postgresElementType: UInt32 { 20 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { PostgresBinaryArray.append(UInt64(bitPattern: self), to: &bytes) }
}

extension Int: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { Int64.postgresArrayType }
    public static var postgresElementType: UInt32 { Int64.postgresElementType }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { Int64(self).appendPostgresBinary(to: &bytes) }
}

extension Int32: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1007 }
    public static var postgresElementType: UInt32 { 23 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) {
        PostgresBinaryArray.append(UInt32(bitPattern: self), to: &bytes)
    }
}

extension Double: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1022 }
    public static var postgresElementType: UInt32 { 701 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { PostgresBinaryArray.append(bitPattern, to: &bytes) }
}

extension Bool: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1000 }
    public static var postgresElementType: UInt32 { 16 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { bytes.append(self ? 1 : 0) }
}

/// A one-dimensional array sent in PostgreSQL's binary format, its type declared (`text[]` for strings, `int8[]`
/// for integers, `float8[]`, `bool[]`; nil elements are NULL): for the large arrays of batch statements, where a
/// text literal costs a quoting pass here and a parsing pass in PostgreSQL (`array_in`, a tenth of its CPU under
/// the command batches' load). The statement may cast it (`\(PostgresBinaryArray(counts))::integer[]`).
public struct PostgresBinaryArray: PostgresEncodable {
    public let postgresBind: PostgresBind
    private let literal: @Sendable () -> String

    public init<Element: PostgresBinaryElement & PostgresEncodable>(_ elements: [Element]) {
        postgresBind = Self.encode(elements.count, type: Element.self, hasNull: false) { i, bytes in
            elements[i].appendPostgresBinary(to: &bytes)
            return true
        }
        literal = { elements.postgresText }
    }

    public init<Element: PostgresBinaryElement & PostgresEncodable>(_ elements: [Element?]) {
        postgresBind = Self.encode(elements.count, type: Element.self, hasNull: elements.contains { $0 == nil }) { i, bytes in
            guard let element = elements[i] else { return false }
            element.appendPostgresBinary(to: &bytes)
            return true
        }
        literal = { PostgresNullableArray(elements).postgresText }
    }

    /// The same array as a text literal (what it would be sent as otherwise).
    public var postgresText: String { literal() }

    /// The array's header (one dimension, from 1; none when empty), then each element as its length and bytes
    /// (`write` answers false for NULL: length -1, no bytes).
    private static func encode<Element: PostgresBinaryElement>(
        _ count: Int, type: Element.Type, hasNull: Bool, write: (Int, inout [UInt8]) -> Bool
    ) -> PostgresBind {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + count * 16)
        append(UInt32(count == 0 ? 0 : 1), to: &bytes)
        append(UInt32(hasNull ? 1 : 0), to: &bytes)
        append(Element.postgresElementType, to: &bytes)
        if count > 0 {
            append(UInt32(count), to: &bytes)
            append(UInt32(1), to: &bytes)
        }
        for i in 0..<count {
            let at = bytes.count
            append(UInt32(0), to: &bytes)
            guard write(i, &bytes) else {
                bytes.replaceSubrange(at..<(at + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
                continue
            }
            withUnsafeBytes(of: UInt32(bytes.count - at - 4).bigEndian) { bytes.replaceSubrange(at..<(at + 4), with: $0) }
        }
        return .binary(type: Element.postgresArrayType, bytes: bytes)
    }

    /// Network byte order.
    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
