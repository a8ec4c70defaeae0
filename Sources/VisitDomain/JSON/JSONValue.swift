/// A parsed JSON document, kept in the order it was written.
///
/// The domain parses request bodies and stored events with its own small parser
/// (`JSONValue.parse`) rather than `JSONSerialization`: it tells a number from a boolean
/// exactly, bounds nesting depth, reports duplicate keys, and is several times faster on
/// the replay path. Objects keep their members in order so that encoded bodies have the
/// seeds' key order, byte for byte.
public enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// The value of `key` when this is an object holding it.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        for member in members where member.key == key { return member.value }
        return nil
    }

    /// The JSON type's name as used in error messages ("a string", "a number", …).
    public var typeDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// One `"key": value` member of a JSON object.
public struct JSONMember: Sendable {
    /// The member's key.
    public var key: String
    /// The member's value.
    public var value: JSONValue

    /// A member.
    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

extension JSONValue: Equatable {
    /// JSON equality: objects compare as unordered maps, numbers by value, and a number
    /// never equals a string or a boolean (the "numbers stay numbers" rule of the seeds).
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for member in a {
                guard let other = b.first(where: { $0.key == member.key }), other.value == member.value else {
                    return false
                }
            }
            return true
        default: return false
        }
    }
}
