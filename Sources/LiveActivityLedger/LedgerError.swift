/// An error from the ledger: input it refuses. Messages never carry a push token.
public struct LedgerError: Error, Sendable, CustomStringConvertible {
    /// A small, extensible set of codes.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Sendable {
            case invalidToken = "invalid_token"
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }
        /// A push token that is not hex of a sane length.
        public static let invalidToken = Code(.invalidToken)
        public var rawValue: String { kind.rawValue }
        public var description: String { kind.rawValue }
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "LedgerError(\(code)): \(message)" }
}
