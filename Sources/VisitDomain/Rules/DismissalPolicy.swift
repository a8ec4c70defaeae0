/// How an ended activity leaves the Lock Screen (ActivityKit's `ActivityUIDismissalPolicy`).
public enum DismissalPolicy: Sendable, Hashable {
    /// At once: `dismissal-date` is the end's own `aps.timestamp`.
    case immediate
    /// The system decides: no `dismissal-date`.
    case `default`
    /// After this many seconds past the end's `aps.timestamp`.
    case after(seconds: Int)
}
