/// One delivery as operators see it (`livevisits outbox list`, `GET /v1/ops/outbox`). No token.
public struct OutboxDelivery: Sendable, Hashable {
    public var id: Int64
    public var apnsId: String
    public var visitId: String
    public var customerId: String
    /// The Live Activity (updates, ends) or nil (starts).
    public var activityId: String?
    /// The push-to-start device (starts), or the activity's device when known.
    public var deviceId: String?
    public var kind: PushIntent.Kind
    public var state: DeliveryState
    /// The planned `apns-priority`.
    public var priority: Int
    /// The `apns-priority` its last attempt went with (5 when the budget downgraded it); nil before one.
    public var sentPriority: Int?
    public var apsTimestamp: Int64
    public var visitVersion: Int64
    public var attempts: Int
    /// Epoch seconds.
    public var createdAt: Double
    public var nextAttemptAt: Double
    public var finishedAt: Double?
    public var lastStatus: Int?
    public var lastReason: String?
}
