/// What became of one send. A sender never throws: every failure is a value with a classification.
public enum PushOutcome: Sendable, Hashable {
    /// APNs accepted the push (200).
    case accepted(latency: Double)
    /// APNs refused it, or no answer came.
    case failed(PushFailure)

    /// Seconds from submission to the outcome.
    public var latency: Double {
        switch self {
        case .accepted(let latency): latency
        case .failed(let failure): failure.latency
        }
    }
}

/// A push APNs did not accept, or that got no answer.
public struct PushFailure: Sendable, Hashable {
    /// What the outbox should do about a failure.
    public enum Classification: String, Sendable, Hashable, CaseIterable {
        /// 429, 500, 503, timeouts, resets, GOAWAY: retry with backoff and the same apns-id.
        case retryable
        /// 410 Unregistered/ExpiredToken, 400 BadDeviceToken, DeviceTokenNotForTopic: retire the token.
        case tokenDead
        /// Our setup is wrong (key, team, topic, clock): pause sending, raise an alert, keep the delivery.
        case configuration
        /// This request is wrong and always will be: dead-letter it.
        case permanent
    }

    /// HTTP status, when APNs answered (nil: no answer, so the push may or may not have arrived).
    public var status: Int?
    /// APNs's reason (`BadDeviceToken`), or a local cause (`timeout`, `connection_lost`).
    public var reason: String?
    /// For 410: when APNs last knew the token valid, milliseconds since 1970.
    public var timestamp: Int64?
    public var latency: Double
    public var classification: Classification

    public init(status: Int?, reason: String?, timestamp: Int64? = nil, latency: Double, classification: Classification) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.latency = latency
        self.classification = classification
    }

    /// True when APNs answered; false when the outcome is unknown (the push may have arrived).
    public var wasAnswered: Bool { status != nil }
}
