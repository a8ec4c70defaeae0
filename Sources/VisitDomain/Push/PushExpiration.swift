/// The `apns-expiration` rule of a push (contract §6): an update expires with its stale
/// date; a start or an end 4 hours (by the rules) after it is sent.
public enum PushExpiration: Sendable, Hashable {
    /// At this epoch second.
    case at(Int)
    /// This many seconds after the send.
    case afterSending(seconds: Int)

    /// The `apns-expiration` header value for a send at `sentAt` (epoch seconds).
    public func epoch(sentAt: Int) -> Int {
        switch self {
        case .at(let epoch): epoch
        case .afterSending(let seconds): sentAt + seconds
        }
    }

    /// Whether an undelivered push is past its expiration at `now` (never, for start/end:
    /// their expiry only starts counting at the send).
    public func hasExpired(now: Int) -> Bool {
        if case .at(let epoch) = self { return now > epoch }
        return false
    }
}
