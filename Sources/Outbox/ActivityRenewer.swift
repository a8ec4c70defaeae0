import Postgres

/// The visit side of the 8-hour renewal (contract §9): a worker given one renews the Live Activities of
/// still-active visits at `OutboxConfiguration.activityRenewalSeconds`. The outbox finds the activities due
/// and sends; what the pushes carry (the visit's current state) comes from here.
public protocol ActivityRenewer: Sendable {
    /// The pushes that renew these activities of one visit, or nil when the visit is not active (then they
    /// are not renewed and lapse at 8 hours). Runs inside the renewal pass's transaction.
    func renewal(visitId: String, activityIds: [String], now: Double, on connection: PostgresConnection) throws
        -> ActivityRenewal?
}

/// One visit's renewal: an `end` per old activity (audience `.activity`, `dismissal-date` = its
/// `aps.timestamp`), then the `start` with the current state (audience `.renewalStart`, a later timestamp;
/// the worker makes it due a second after the ends, so it is never sent before them).
public struct ActivityRenewal: Sendable, Hashable {
    public var customerId: String
    public var ends: [PushIntent]
    public var start: PushIntent

    public init(customerId: String, ends: [PushIntent], start: PushIntent) {
        self.customerId = customerId
        self.ends = ends
        self.start = start
    }
}
