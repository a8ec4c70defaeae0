/// A request body the domain refuses, naming the field at fault.
///
/// `code == .malformedJSON` means the body is not JSON at all (HTTP 400); every other
/// code is valid JSON that breaks a rule (HTTP 422).
public struct VisitInputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of refusal; compare with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Value: String, Sendable {
            case malformedJSON = "malformed_json"
            case invalidBody = "invalid_body"
            case unknownEventType = "unknown_event_type"
            case missingField = "missing_field"
            case wrongType = "wrong_type"
            case invalidValue = "invalid_value"
            case unknownField = "unknown_field"
            case invalidId = "invalid_id"
            case invalidLocale = "invalid_locale"
        }
        let value: Value

        /// The body is not JSON (syntax, encoding, nesting too deep). HTTP 400.
        public static let malformedJSON = Code(value: .malformedJSON)
        /// Valid JSON but not an object, or an object with a duplicate key. HTTP 422.
        public static let invalidBody = Code(value: .invalidBody)
        /// `type` names no event that may be posted. HTTP 422.
        public static let unknownEventType = Code(value: .unknownEventType)
        /// A required field is absent (or `null`). HTTP 422.
        public static let missingField = Code(value: .missingField)
        /// A field has the wrong JSON type (a distance as a string). HTTP 422.
        public static let wrongType = Code(value: .wrongType)
        /// A field's value breaks a rule (negative, empty, too long, window backwards). HTTP 422.
        public static let invalidValue = Code(value: .invalidValue)
        /// A field the body may not carry (often a typo). HTTP 422.
        public static let unknownField = Code(value: .unknownField)
        /// An id outside the one grammar (`IdGrammar`): the refusal names the field. HTTP 422.
        public static let invalidId = Code(value: .invalidId)
        /// A `locale` that is not a well-formed BCP 47 language tag (RFC 5646): the refusal names the field.
        /// HTTP 422.
        public static let invalidLocale = Code(value: .invalidLocale)

        /// The snake_case code for `{"error":{"code":…}}`.
        public var rawValue: String { value.rawValue }
        public var description: String { rawValue }
        /// The HTTP status the contract gives this code (400 for malformed JSON, else 422).
        public var httpStatus: Int { value == .malformedJSON ? 400 : 422 }
    }

    /// What kind of refusal.
    public var code: Code
    /// The field's path (`technician.name`, `arrivalWindow.end`), `nil` for the body as a whole.
    public var field: String?
    /// A message for humans, naming the field. Never echoes a string value back.
    public var message: String
    /// The JSON syntax error behind a `malformedJSON`, if any.
    public var cause: JSONParseError?

    /// An input error.
    public init(code: Code, field: String?, message: String, cause: JSONParseError? = nil) {
        self.code = code
        self.field = field
        self.message = message
        self.cause = cause
    }

    public var description: String { "\(code): \(message)" }
}
