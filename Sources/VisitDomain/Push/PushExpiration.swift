/// The `apns-expiration` rule of a push (contract §6): an update expires with its stale
/// date; a start or an end 4 hours (by the rules) after it is sent; a catch-up with its
/// stale date, or at its send once that date has passed.
public enum PushExpiration: Sendable, Hashable {
    /// At this epoch second.
    case at(Int)
    /// This many seconds after the send.
    case afterSending(seconds: Int)
    /// At this epoch second (the stale date), or at the send when that is later. A catch-up: it
    /// repeats the visit's latest state for a token that just registered, which the contract pushes
    /// "at once" even when the state is already stale (an activity registering 10 minutes after an
    /// `enRoute` must still get it). It never expires before it is sent; a newer state supersedes it.
    case atOrWhenSent(Int)

    /// The `apns-expiration` header value for a send at `sentAt` (epoch seconds).
    public func epoch(sentAt: Int) -> Int {
        switch self {
        case .at(let epoch): epoch
        case .afterSending(let seconds): sentAt + seconds
        case .atOrWhenSent(let epoch): max(epoch, sentAt)
        }
    }

    /// Whether an undelivered push is past its expiration at `now` (never, for start/end:
    /// their expiry only starts counting at the send; never for a catch-up either).
    public func hasExpired(now: Int) -> Bool {
        if case .at(let epoch) = self { return now > epoch }
        return false
    }
}
