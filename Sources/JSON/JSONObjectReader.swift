/// Typed, path-aware access to the members of one JSON object. `null` counts as absent.
///
/// Every refusal is a `FieldProblem` naming the field's dotted path, so request bodies, stored
/// events and rule files all explain themselves the same way.
public struct JSONObjectReader: Sendable {
    /// The object's members, in document order.
    public let members: [JSONMember]
    /// The object's dotted path in the document (empty for the document itself).
    public let path: String

    /// A reader of `value`, which must be an object.
    public init(_ value: JSONValue, path: String) throws(FieldProblem) {
        guard case .object(let members) = value else {
            throw FieldProblem(
                kind: .wrongType, path: path.isEmpty ? "body" : path,
                reason: "expected an object, got \(value.typeDescription)")
        }
        self.members = members
        self.path = path
    }

    /// The dotted path of member `key`.
    public func fieldPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The value of `key`; `nil` when absent or `null`.
    public func value(_ key: String) -> JSONValue? {
        for member in members where member.key == key {
            if case .null = member.value { return nil }
            return member.value
        }
        return nil
    }

    /// Refuses the first member whose key is not in `allowed`.
    public func rejectUnknown(allowed: Set<String>) throws(FieldProblem) {
        for member in members where !allowed.contains(member.key) {
            throw FieldProblem(
                kind: .unknownField, path: fieldPath(FieldProblem.displayKey(member.key)), reason: "unknown field")
        }
    }

    /// The value of `key`, which must be present and not `null`.
    public func required(_ key: String) throws(FieldProblem) -> JSONValue {
        guard let value = value(key) else {
            throw FieldProblem(kind: .missing, path: fieldPath(key), reason: "required field is missing")
        }
        return value
    }

    /// The problem "`key` should be `expected`, it is `value`'s type".
    public func wrongType(_ key: String, expected: String, got value: JSONValue) -> FieldProblem {
        FieldProblem(
            kind: .wrongType, path: fieldPath(key), reason: "expected \(expected), got \(value.typeDescription)")
    }

    /// The problem "`key` has the right type but an unacceptable value".
    public func invalid(_ key: String, _ reason: String) -> FieldProblem {
        FieldProblem(kind: .invalidValue, path: fieldPath(key), reason: reason)
    }

    /// A required string; with `maxBytes`, non-empty (after trimming spaces), bounded in UTF-8
    /// bytes and free of NUL (PostgreSQL text cannot hold it).
    public func string(_ key: String, maxBytes: Int? = nil) throws(FieldProblem) -> String {
        let value = try required(key)
        guard case .string(let string) = value else { throw wrongType(key, expected: "a string", got: value) }
        if let maxBytes { try check(string, key: key, maxBytes: maxBytes) }
        return string
    }

    /// An optional string, checked like `string(_:maxBytes:)` when present.
    public func optionalString(_ key: String, maxBytes: Int? = nil) throws(FieldProblem) -> String? {
        guard value(key) != nil else { return nil }
        return try string(key, maxBytes: maxBytes)
    }

    /// Refuses a string that is too long, blank or holds NUL.
    public func check(_ string: String, key: String, maxBytes: Int) throws(FieldProblem) {
        if string.utf8.count > maxBytes { throw invalid(key, "longer than \(maxBytes) bytes") }
        if string.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) { throw invalid(key, "must not be empty") }
        if string.utf8.contains(0) { throw invalid(key, "must not contain NUL characters") }
    }

    /// A required finite number.
    public func double(_ key: String) throws(FieldProblem) -> Double {
        let value = try required(key)
        guard case .number(let number) = value else { throw wrongType(key, expected: "a number", got: value) }
        guard number.isFinite else { throw invalid(key, "out of range") }
        return number
    }

    /// An optional finite number.
    public func optionalDouble(_ key: String) throws(FieldProblem) -> Double? {
        guard value(key) != nil else { return nil }
        return try double(key)
    }

    /// A required whole number (`5`, `5.0` and `5e0` alike) of magnitude below 2^53.
    public func integer(_ key: String) throws(FieldProblem) -> Int {
        let number = try double(key)
        guard let whole = JSONValue.number(number).integerValue else { throw invalid(key, "expected a whole number") }
        return Int(whole)
    }

    /// An optional whole number.
    public func optionalInteger(_ key: String) throws(FieldProblem) -> Int? {
        guard value(key) != nil else { return nil }
        return try integer(key)
    }

    /// A required boolean (a number is not one).
    public func bool(_ key: String) throws(FieldProblem) -> Bool {
        let value = try required(key)
        guard case .bool(let flag) = value else { throw wrongType(key, expected: "a boolean", got: value) }
        return flag
    }

    /// An optional boolean.
    public func optionalBool(_ key: String) throws(FieldProblem) -> Bool? {
        guard value(key) != nil else { return nil }
        return try bool(key)
    }

    /// A required object, read with its own path.
    public func object(_ key: String) throws(FieldProblem) -> JSONObjectReader {
        let value = try required(key)
        guard case .object = value else { throw wrongType(key, expected: "an object", got: value) }
        return try JSONObjectReader(value, path: fieldPath(key))
    }

    /// An optional object.
    public func optionalObject(_ key: String) throws(FieldProblem) -> JSONObjectReader? {
        guard value(key) != nil else { return nil }
        return try object(key)
    }
}
