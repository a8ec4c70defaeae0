/// Why the state machine refuses an event.
public struct VisitDecisionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of refusal; compare with the static members.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Value: String, Sendable {
            case illegalTransition = "illegal_transition"
            case visitEnded = "visit_ended"
            case alreadyScheduled = "already_scheduled"
            case notScheduled = "not_scheduled"
            case pushTooLarge = "push_too_large"
        }
        let value: Value

        /// The event is not legal from the visit's status (contract §4 table). HTTP 409.
        public static let illegalTransition = Code(value: .illegalTransition)
        /// The visit has ended and accepts nothing more. HTTP 409.
        public static let visitEnded = Code(value: .visitEnded)
        /// `scheduled` on a visit that exists. HTTP 409.
        public static let alreadyScheduled = Code(value: .alreadyScheduled)
        /// An event other than `scheduled` on a visit that does not exist. HTTP 404.
        public static let notScheduled = Code(value: .notScheduled)
        /// A push the event implies is over the APNs 4 KB budget. HTTP 422.
        public static let pushTooLarge = Code(value: .pushTooLarge)

        /// The snake_case code for `{"error":{"code":…}}`.
        public var rawValue: String { value.rawValue }
        public var description: String { rawValue }
        /// The HTTP status the contract gives this code.
        public var httpStatus: Int {
            switch value {
            case .illegalTransition, .visitEnded, .alreadyScheduled: 409
            case .notScheduled: 404
            case .pushTooLarge: 422
            }
        }
    }

    /// What kind of refusal.
    public var code: Code
    /// A message for humans.
    public var message: String
    /// The visit's status when refused (`nil` before scheduling).
    public var status: VisitStatus?
    /// The refused event's type.
    public var eventType: VisitEventType

    /// A decision error.
    public init(code: Code, message: String, status: VisitStatus?, eventType: VisitEventType) {
        self.code = code
        self.message = message
        self.status = status
        self.eventType = eventType
    }

    public var description: String { "\(code): \(message)" }
}
