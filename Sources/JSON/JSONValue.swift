/// A JSON document, kept in the order it was written: the project's one JSON reader and writer.
///
/// Request bodies, stored events, push bodies, API answers, the APNs client's error answers and
/// provider tokens, and what the APNs simulator receives all go through this type rather than
/// `JSONSerialization` or `Codable`: it tells a number from a boolean exactly, bounds nesting depth,
/// reports duplicate keys, and is several times faster on the replay path. Objects keep their
/// members in order so that encoded bodies have the seeds' key order, byte for byte.
public enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// Integers of smaller magnitude than this (2^53) are exact as a `Double`; they are written
    /// without a fraction and read back as whole numbers.
    public static let exactIntegerBound: Double = 9_007_199_254_740_992

    /// The value of `key` when this is an object holding it.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        for member in members where member.key == key { return member.value }
        return nil
    }

    /// The element at `index` when this is an array long enough.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
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

extension JSONValue {
    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The number, if this is one (a boolean is not).
    public var doubleValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The number as an integer, if this is a whole number (`5`, `5.0`, `5e0`) of magnitude below 2^53.
    public var integerValue: Int64? {
        guard case .number(let number) = self, number == number.rounded(.towardZero),
            abs(number) < JSONValue.exactIntegerBound
        else { return nil }
        return Int64(number)
    }

    /// The flag, if this is a boolean (a number is not).
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The members in document order, if this is an object.
    public var objectMembers: [JSONMember]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayElements: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// True when this is an object.
    public var isObject: Bool { objectMembers != nil }

    /// True when this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

/// One `"key": value` member of a JSON object.
public struct JSONMember: Sendable, Equatable {
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
    /// Key order, which this ignores, is in `objectMembers`.
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

// Literals, so that documents written in code read like JSON: `["alg": "ES256", "kid": .string(keyId)]`.
// (No `nil` literal: `value == nil` on an optional must keep meaning "absent".)

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// An object with the members in the literal's order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(elements.map { JSONMember($0.0, $0.1) })
    }
}
