/// One recorded attempt of a delivery.
public struct DeliveryAttempt: Sendable, Hashable {
    public var deliveryId: Int64
    /// 1 for the first attempt.
    public var attempt: Int
    /// Epoch seconds (the worker's clock) when the send started.
    public var attemptedAt: Double
    /// HTTP status, nil when no answer came.
    public var status: Int?
    public var reason: String?
    public var latencySeconds: Double?
    /// The backoff chosen after a retryable failure (the next attempt was not due before then).
    public var retryAfterSeconds: Double?
}
