extension VisitInputError {
    public init(_ problem: FieldProblem) {
        let code: Code =
            switch problem.kind {
            case .missing: .missingField
            case .wrongType: .wrongType
            case .invalidValue: .invalidValue
            case .unknownField: .unknownField
            }
        self.init(code: code, field: problem.path, message: problem.message)
    }

    /// Runs reads of a `JSONObjectReader`, turning the field they refuse into the domain's refusal.
    public static func reading<T>(_ read: () throws(FieldProblem) -> T) throws(VisitInputError) -> T {
        do { return try read() } catch { throw VisitInputError(error) }
    }

    /// Parses a body into JSON (every body the API reads), telling "not JSON" (400) from "JSON that is not an
    /// object" (422); an object or array of more than `JSONValue.requestMemberLimit` members is 422 too.
    public static func parseBody(_ body: some Collection<UInt8>) throws(VisitInputError) -> JSONObjectReader {
        let value: JSONValue
        do {
            value = try JSONValue.parse(body, maximumMembers: JSONValue.requestMemberLimit)
        } catch {
            switch error.kind {
            case .duplicateKey(let key):
                let shown = FieldProblem.displayKey(key)
                throw VisitInputError(code: .invalidBody, field: shown, message: "\(shown): appears twice in the body")
            case .tooManyMembers(let limit):
                throw VisitInputError(
                    code: .invalidBody, field: nil,
                    message: "body: an object or array holds more than \(limit) members (the limit is \(limit))")
            case .syntax, .tooDeep:
                break
            }
            throw VisitInputError(
                code: .malformedJSON, field: nil, message: "the body is not valid JSON: \(error.description)",
                cause: error)
        }
        guard case .object = value else {
            throw VisitInputError(
                code: .invalidBody, field: nil, message: "body: expected a JSON object, got \(value.typeDescription)")
        }
        do { return try JSONObjectReader(value, path: "") } catch { throw VisitInputError(error) }
    }
}
