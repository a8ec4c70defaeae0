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

extension PostgresQuery {
    /// The parameter types it declares: none unless a bind is binary (then 0, inferred, for each text bind).
    var declaredTypes: [UInt32] {
        binds.contains { $0.declaredType != 0 } ? binds.map(\.declaredType) : []
    }
}

/// A value that goes into an array sent in binary (`PostgresBinaryArray`): its element type and its bytes.
public protocol PostgresBinaryElement: Sendable {
    /// The OID of the array type of this element type (`text[]` for `String`).
    static var postgresArrayType: UInt32 { get }
    /// The OID of this element type.
    static var postgresElementType: UInt32 { get }
    /// The length of its binary format.
    var postgresBinaryCount: Int { get }
    /// Appends the value in PostgreSQL's binary format (without its length).
    func appendPostgresBinary(to bytes: inout [UInt8])
}

extension String: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1009 }
    public static var postgresElementType: UInt32 { 25 }
    public var postgresBinaryCount: Int { utf8.count }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { bytes.append(contentsOf: utf8) }
}

extension Int64: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1016 }
    public static var postgresElementType: UInt32 { 20 }
    public var postgresBinaryCount: Int { 8 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { PostgresBinaryArray.append(UInt64(bitPattern: self), to: &bytes) }
}

extension Int: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { Int64.postgresArrayType }
    public static var postgresElementType: UInt32 { Int64.postgresElementType }
    public var postgresBinaryCount: Int { 8 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { Int64(self).appendPostgresBinary(to: &bytes) }
}

extension Int32: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1007 }
    public static var postgresElementType: UInt32 { 23 }
    public var postgresBinaryCount: Int { 4 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) {
        PostgresBinaryArray.append(UInt32(bitPattern: self), to: &bytes)
    }
}

extension Double: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1022 }
    public static var postgresElementType: UInt32 { 701 }
    public var postgresBinaryCount: Int { 8 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { PostgresBinaryArray.append(bitPattern, to: &bytes) }
}

extension Bool: PostgresBinaryElement {
    public static var postgresArrayType: UInt32 { 1000 }
    public static var postgresElementType: UInt32 { 16 }
    public var postgresBinaryCount: Int { 1 }
    public func appendPostgresBinary(to bytes: inout [UInt8]) { bytes.append(self ? 1 : 0) }
}

/// A one-dimensional array sent in PostgreSQL's binary format, its type declared (`text[]` for strings, `int8[]`
/// for integers, `float8[]`, `bool[]`; nil elements are NULL): for the large arrays of batch statements, where a
/// text literal costs a quoting pass here and a parsing pass in PostgreSQL (`array_in`, a tenth of its CPU under
/// the command batches' load). The statement may cast it (`\(PostgresBinaryArray(counts))::integer[]`).
public struct PostgresBinaryArray: PostgresEncodable {
    public let postgresBind: PostgresBind
    @usableFromInline let literal: @Sendable () -> String

    // (Inlinable, so each call site's element type is specialized: unspecialized, every element went through
    // witness tables.)
    @inlinable
    public init<Element: PostgresBinaryElement & PostgresEncodable>(_ elements: [Element]) {
        postgresBind = Self.encode(elements.count, hasNull: false) { elements[$0] }
        literal = { elements.postgresText }
    }

    @inlinable
    public init<Element: PostgresBinaryElement & PostgresEncodable>(_ elements: [Element?]) {
        postgresBind = Self.encode(elements.count, hasNull: elements.contains { $0 == nil }) { elements[$0] }
        literal = { PostgresNullableArray(elements).postgresText }
    }

    /// The same array as a text literal (what it would be sent as otherwise).
    public var postgresText: String { literal() }

    /// The array's header (one dimension, from 1; none when empty), then each element as its length and bytes
    /// (NULL: length -1, no bytes), in one allocation of the exact size.
    @inlinable
    static func encode<Element: PostgresBinaryElement>(
        _ count: Int, hasNull: Bool, element: (Int) -> Element?
    ) -> PostgresBind {
        var size = 20
        for i in 0..<count { size += 4 + (element(i)?.postgresBinaryCount ?? 0) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        append(UInt32(count == 0 ? 0 : 1), to: &bytes)
        append(UInt32(hasNull ? 1 : 0), to: &bytes)
        append(Element.postgresElementType, to: &bytes)
        if count > 0 {
            append(UInt32(count), to: &bytes)
            append(UInt32(1), to: &bytes)
        }
        for i in 0..<count {
            guard let value = element(i) else {
                append(UInt32.max, to: &bytes)
                continue
            }
            append(UInt32(value.postgresBinaryCount), to: &bytes)
            value.appendPostgresBinary(to: &bytes)
        }
        return .binary(type: Element.postgresArrayType, bytes: bytes)
    }

    /// Network byte order.
    @inlinable
    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable
    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
