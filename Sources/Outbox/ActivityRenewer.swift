import Postgres

/// The visit side of the 8-hour renewal: a worker given one renews the Live Activities of still-active
/// visits at `OutboxConfiguration.activityRenewalSeconds`. The ledger finds the activities due and which of
/// them are renewed; what the pushes carry (the visit's current state) comes from here.
public protocol ActivityRenewer: Sendable {
    /// The pushes that renew activities of one visit, or nil when the visit is not active (then they are not
    /// renewed and lapse). Runs inside the renewal pass's transaction.
    func renewal(visitId: String, now: Double, on connection: PostgresConnection) throws -> ActivityRenewal?
}

/// One visit's renewal, for each activity it renews: the `end` (`dismissal-date` = its `aps.timestamp`),
/// then the `start` with the current state and the rules' `renewalAlert` (a later timestamp; the worker
/// makes it due a second after the ends, so it is never sent before them). The worker gives each its
/// audience: `.activity(id)` for the end, `.renewalStart(key: id, device:)` for the start.
public struct ActivityRenewal: Sendable, Hashable {
    public var customerId: String
    public var end: PushIntent
    public var start: PushIntent

    public init(customerId: String, end: PushIntent, start: PushIntent) {
        self.customerId = customerId
        self.end = end
        self.start = start
    }
}
