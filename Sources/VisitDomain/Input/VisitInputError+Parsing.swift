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

    /// Parses a body into JSON (every body the API reads), telling "not JSON" (400) from "JSON that is not an object" (422).
    public static func parseBody(_ body: some Collection<UInt8>) throws(VisitInputError) -> JSONObjectReader {
        let value: JSONValue
        do {
            value = try JSONValue.parse(body)
        } catch {
            if case .duplicateKey(let key) = error.kind {
                let shown = FieldProblem.displayKey(key)
                throw VisitInputError(code: .invalidBody, field: shown, message: "\(shown): appears twice in the body")
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
