/// Where a delivery stands.
public enum DeliveryState: String, Sendable, Hashable, CaseIterable {
    /// Waiting to be sent (first time, in backoff, deferred, or paused by a configuration error).
    case pending
    /// Claimed by a worker under a lease.
    case sending
    /// APNs accepted it (or, for a start of unknown outcome, its activity registered).
    case sent
    /// Gave up: a permanent error, or still failing past the maximum age. `retry(id:)` requeues it.
    case dead
    /// An update past its stale date (`apns-expiration`) before it could be sent.
    case expired
    /// A newer state replaced it before it was sent, or the target had already received something newer.
    case superseded
    /// Its token was retired, forgotten or (a start's) replaced, Live Activities were switched off, its
    /// visit ended first, or (a start) its visit already had a Live Activity when it came due.
    case cancelled

    /// True for states a delivery never leaves on its own.
    public var isFinal: Bool { self != .pending && self != .sending }
}
