import LiveActivityLedger

/// A push that was refused or never answered, as the outbox needs to judge it: what to do about it
/// (`classification`), and what to record with the attempt.
public struct PushFailure: Sendable, Hashable, CustomStringConvertible {
    /// What the worker does about a failure.
    public enum Class: Sendable, Hashable {
        /// Try again later with backoff and the same push id.
        case retryable
        /// The token will never work again: retire it, for this reason.
        case tokenDead(TokenRegistry.RetirementReason)
        /// Our setup is wrong (key, team, topic, clock): pause sending and raise the alert instead of
        /// burning retries or dropping deliveries.
        case configuration
        /// This push is wrong and always will be: dead-letter it.
        case permanent

        /// The metric label (`livevisits_outbox_attempts_total{result}`).
        public var label: String {
            switch self {
            case .retryable: "retryable"
            case .tokenDead: "token_dead"
            case .configuration: "configuration"
            case .permanent: "permanent"
            }
        }
    }

    public var classification: Class
    /// The HTTP status the push service answered, when it answered.
    public var status: Int?
    /// The service's reason (`BadDeviceToken`), or the local cause when none was given (`timeout`):
    /// recorded with the attempt and used as a metric label.
    public var reason: String
    /// For a token the service no longer accepts (410): when it found the token invalid, in
    /// milliseconds since 1970. A registration after that wins over the verdict.
    public var tokenInvalidSinceMs: Int64?
    /// True when the push may have reached the service without us hearing back (a timeout, a
    /// connection lost with the push in flight); false when it answered or no connection was made.
    public var outcomeUnknown: Bool
    /// Seconds from submission to the failure.
    public var latency: Double

    public init(
        classification: Class, status: Int? = nil, reason: String, tokenInvalidSinceMs: Int64? = nil,
        outcomeUnknown: Bool = false,
        latency: Double
    ) {
        self.classification = classification
        self.status = status
        self.reason = reason
        self.tokenInvalidSinceMs = tokenInvalidSinceMs
        self.outcomeUnknown = outcomeUnknown
        self.latency = latency
    }

    public var description: String {
        "push failure \(classification.label): \(status.map(String.init) ?? "no answer") \(reason)"
            + (tokenInvalidSinceMs.map { " invalid since \($0)" } ?? "")
    }
}
