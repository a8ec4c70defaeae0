/// Which tokens a push plan goes to; the outbox resolves the tokens at send time.
public enum PushAudience: String, Sendable, Hashable {
    /// The customer's push-to-start tokens (a `start`).
    case pushToStartTokens
    /// The update tokens of the visit's registered Live Activities (`update`, `end`).
    case liveActivities
    /// The push-to-start tokens whose `start` of this visit has not gone out yet (a deferred start,
    /// waiting for the arrival window): a newer state replaces that start's body, timestamp and release
    /// time, and creates no start where none is waiting.
    case pendingStarts
    /// The customer's devices that follow the visit without a Live Activity (contract §9): an ordinary
    /// notification (`alert`) to each one's notification token.
    case fallbackDevices
}
