import Outbox

/// One webhook as operators see it (`GET /v1/ops/outbox` with kind `webhook`, `livevisits outbox list`).
public struct Webhook: Sendable, Hashable {
    /// The outbox id (shared numbering with deliveries).
    public var id: Int64
    /// The body's `id`, the same on every retry.
    public var webhookId: String
    public var visitId: String
    /// `visit.event`, `delivery.sent|dead|expired`, `liveActivity.<state>`.
    public var type: String
    /// `pending`, `sending`, `sent` or `dead`.
    public var state: DeliveryState
    public var attempts: Int
    /// Epoch seconds.
    public var occurredAt: Int64
    public var createdAt: Double
    public var nextAttemptAt: Double
    public var finishedAt: Double?
    /// The receiver's last status (nil: none yet, or no answer).
    public var lastStatus: Int?
    /// Why the last attempt failed without a status (timeout, connection refused), or nil.
    public var lastReason: String?
}

/// A webhook claimed for sending, with what its body is built from.
struct ClaimedWebhook: Sendable {
    var id: Int64
    var webhookId: String
    var visitId: String
    var type: String
    var occurredAt: Int64
    /// `visit.event`: the event whose history entry is the data.
    var eventPosition: Int64?
    /// The others: the data as written.
    var data: String?
    var createdAt: Double
    var attempts: Int
}

/// How one attempt ended, for `WebhookStore.complete`.
struct WebhookCompletion: Sendable {
    var id: Int64
    var visitId: String
    /// `sent`, `pending` (retry at `nextAttemptAt`) or `dead`.
    var state: DeliveryState
    var nextAttemptAt: Double?
    var status: Int?
    var reason: String?
    var latencySeconds: Double?
}
