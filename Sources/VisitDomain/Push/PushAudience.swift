/// Which tokens a push plan goes to; the outbox resolves the tokens at send time.
public enum PushAudience: String, Sendable, Hashable {
    /// The customer's push-to-start tokens (a `start`).
    case pushToStartTokens
    /// The update tokens of the visit's registered Live Activities (`update`, `end`).
    case liveActivities
}
