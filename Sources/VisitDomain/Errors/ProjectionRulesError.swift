/// A rules file the projection refuses, naming the key path at fault
/// (`statuses.nearby.relevance: expected a number`).
public struct ProjectionRulesError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure; compare with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Value: String, Sendable {
            case unreadable = "rules_unreadable"
            case malformedJSON = "rules_malformed_json"
            case invalid = "rules_invalid"
        }
        let value: Value

        /// The file could not be read.
        public static let unreadable = Code(value: .unreadable)
        /// The file is not JSON.
        public static let malformedJSON = Code(value: .malformedJSON)
        /// The JSON breaks the rules schema.
        public static let invalid = Code(value: .invalid)

        /// The snake_case code.
        public var rawValue: String { value.rawValue }
        public var description: String { rawValue }
    }

    /// What kind of failure.
    public var code: Code
    /// The dotted key path (`statuses.nearby.relevance`), empty for the document itself.
    public var keyPath: String
    /// What is wrong there.
    public var reason: String

    /// A rules error.
    public init(code: Code, keyPath: String, reason: String) {
        self.code = code
        self.keyPath = keyPath
        self.reason = reason
    }

    /// `keyPath: reason`, the one line an operator reads.
    public var message: String { keyPath.isEmpty ? reason : "\(keyPath): \(reason)" }
    public var description: String { message }
}
