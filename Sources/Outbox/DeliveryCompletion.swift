/// How a claimed delivery ends its lease: its next state and, when a send was made, the attempt.
struct DeliveryCompletion: Sendable, Hashable {
    var id: Int64
    var state: DeliveryState
    /// For `pending`: when to try again.
    var nextAttemptAt: Double?
    var status: Int?
    var reason: String?
    /// For `pending` starts: since when the outcome of an earlier send is unknown.
    var outcomeUnknownSince: Double?
    /// The attempt made under this claim, if a send was made.
    var attempt: Int?
    var attemptedAt: Double?
    var latency: Double?
    /// The `apns-priority` the attempt went with (its plan's, or 5 after a downgrade).
    var sentPriority: Int?
    /// For a retry: the backoff chosen (seconds from now).
    var retryAfter: Double?
    /// For `sent`: the `apns-unique-id` APNs acknowledged the attempt with (sandbox only), else nil.
    var uniqueId: String?
    /// For a broadcast sent under this claim: the channel it went to (kept, as the channel row is not).
    var channelId: String?
}
