/// An error from the ledger: input it refuses, or a registration beyond a cap. Messages never carry a push token.
public struct LedgerError: Error, Sendable, CustomStringConvertible {
    /// A small, extensible set of codes.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Sendable {
            case invalidToken = "invalid_token"
            case tooManyActivities = "too_many_activities"
            case tooManyDevices = "too_many_devices"
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }
        /// A push token that is not hex of a sane length.
        public static let invalidToken = Code(.invalidToken)
        /// A new Live Activity beyond the visit's cap (`TokenRegistry.maximumLiveActivitiesPerVisit`).
        public static let tooManyActivities = Code(.tooManyActivities)
        /// A new device beyond the customer's cap (`TokenRegistry.maximumDevicesPerCustomer`).
        public static let tooManyDevices = Code(.tooManyDevices)
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
