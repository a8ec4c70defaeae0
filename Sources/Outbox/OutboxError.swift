/// An error from the outbox: invalid input to enqueue, or an operations request that
/// cannot be honoured. Messages never carry a push token.
public struct OutboxError: Error, Sendable, CustomStringConvertible {
    /// A small, extensible set of codes.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Sendable {
            case invalidIntent = "invalid_intent"
            case notFound = "not_found"
            case notRetryable = "not_retryable"
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }
        /// A push intent that cannot be delivered as given (bad priority, empty body, update without stale date).
        public static let invalidIntent = Code(.invalidIntent)
        /// No delivery with that id.
        public static let notFound = Code(.notFound)
        /// Only dead or expired deliveries can be retried.
        public static let notRetryable = Code(.notRetryable)
        public var rawValue: String { kind.rawValue }
        public var description: String { kind.rawValue }
    }

    public let code: Code
    public let message: String
    public let underlying: (any Error)?

    public init(code: Code, message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The HTTP status for the API's error mapping.
    public var httpStatus: Int {
        switch code {
        case .notFound: 404
        case .notRetryable: 409
        default: 422
        }
    }

    public var description: String { "OutboxError(\(code)): \(message)" }
}
