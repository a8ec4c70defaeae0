/// Typed, path-aware access to the members of one JSON object. `null` counts as absent.
struct JSONObjectReader {
    let members: [JSONMember]
    let path: String

    init(_ value: JSONValue, path: String) throws(FieldProblem) {
        guard case .object(let members) = value else {
            throw FieldProblem(
                kind: .wrongType, path: path.isEmpty ? "body" : path,
                reason: "expected an object, got \(value.typeDescription)")
        }
        self.members = members
        self.path = path
    }

    func fieldPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func value(_ key: String) -> JSONValue? {
        for member in members where member.key == key {
            if case .null = member.value { return nil }
            return member.value
        }
        return nil
    }

    func rejectUnknown(allowed: Set<String>) throws(FieldProblem) {
        for member in members where !allowed.contains(member.key) {
            throw FieldProblem(
                kind: .unknownField, path: fieldPath(FieldProblem.displayKey(member.key)), reason: "unknown field")
        }
    }

    func required(_ key: String) throws(FieldProblem) -> JSONValue {
        guard let value = value(key) else {
            throw FieldProblem(kind: .missing, path: fieldPath(key), reason: "required field is missing")
        }
        return value
    }

    func wrongType(_ key: String, expected: String, got value: JSONValue) -> FieldProblem {
        FieldProblem(
            kind: .wrongType, path: fieldPath(key), reason: "expected \(expected), got \(value.typeDescription)")
    }

    func invalid(_ key: String, _ reason: String) -> FieldProblem {
        FieldProblem(kind: .invalidValue, path: fieldPath(key), reason: reason)
    }

    /// A required string; with `maxBytes`, non-empty (after trimming spaces), bounded in UTF-8
    /// bytes and free of NUL (PostgreSQL text cannot hold it).
    func string(_ key: String, maxBytes: Int? = nil) throws(FieldProblem) -> String {
        let value = try required(key)
        guard case .string(let string) = value else { throw wrongType(key, expected: "a string", got: value) }
        if let maxBytes { try check(string, key: key, maxBytes: maxBytes) }
        return string
    }

    func optionalString(_ key: String, maxBytes: Int? = nil) throws(FieldProblem) -> String? {
        guard value(key) != nil else { return nil }
        return try string(key, maxBytes: maxBytes)
    }

    func check(_ string: String, key: String, maxBytes: Int) throws(FieldProblem) {
        if string.utf8.count > maxBytes { throw invalid(key, "longer than \(maxBytes) bytes") }
        if string.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) { throw invalid(key, "must not be empty") }
        if string.utf8.contains(0) { throw invalid(key, "must not contain NUL characters") }
    }

    func double(_ key: String) throws(FieldProblem) -> Double {
        let value = try required(key)
        guard case .number(let number) = value else { throw wrongType(key, expected: "a number", got: value) }
        guard number.isFinite else { throw invalid(key, "out of range") }
        return number
    }

    func optionalDouble(_ key: String) throws(FieldProblem) -> Double? {
        guard value(key) != nil else { return nil }
        return try double(key)
    }

    func integer(_ key: String) throws(FieldProblem) -> Int {
        let number = try double(key)
        guard number == number.rounded(.towardZero), abs(number) < 9_007_199_254_740_992 else {
            throw invalid(key, "expected a whole number")
        }
        return Int(number)
    }

    func optionalInteger(_ key: String) throws(FieldProblem) -> Int? {
        guard value(key) != nil else { return nil }
        return try integer(key)
    }

    func bool(_ key: String) throws(FieldProblem) -> Bool {
        let value = try required(key)
        guard case .bool(let flag) = value else { throw wrongType(key, expected: "a boolean", got: value) }
        return flag
    }

    func optionalBool(_ key: String) throws(FieldProblem) -> Bool? {
        guard value(key) != nil else { return nil }
        return try bool(key)
    }

    func object(_ key: String) throws(FieldProblem) -> JSONObjectReader {
        let value = try required(key)
        guard case .object = value else { throw wrongType(key, expected: "an object", got: value) }
        return try JSONObjectReader(value, path: fieldPath(key))
    }

    func optionalObject(_ key: String) throws(FieldProblem) -> JSONObjectReader? {
        guard value(key) != nil else { return nil }
        return try object(key)
    }
}
