import LiveActivityLedger
import Outbox
import Postgres
import VisitDomain
import VisitProjections

/// The device writes of contract §9: Live Activity, push-to-start and notification tokens, and a device's
/// preferences. Each is a step of a transaction the caller opens (the API's, which may also keep its answer
/// under an Idempotency-Key); the steps that may enqueue pushes say whether they did, so the outbox is
/// woken after the commit (`OutboxPushes.committed`).
public struct DeviceRegistrations: Sendable {
    public let ledger: LiveActivityLedger
    public var tokens: TokenRegistry { ledger.tokens }
    public let pushes: OutboxPushes
    /// Told of every registered target, so the visits' next commands are written with their pushes.
    public let states: VisitStateCache
    public let rules: ProjectionRules

    public init(ledger: LiveActivityLedger, pushes: OutboxPushes, states: VisitStateCache, rules: ProjectionRules) {
        self.ledger = ledger
        self.pushes = pushes
        self.states = states
        self.rules = rules
    }

    /// The visit does not exist, or is not the customer's.
    public struct VisitNotFound: Error, Sendable {}

    /// The visit has no Live Activity by that id.
    public struct ActivityNotFound: Error, Sendable {}

    /// A Live Activity of the customer's visit; when the app is behind the visit's `version` (or says none),
    /// the latest state is pushed to it at once. With `deviceId`, the visit's other activities on that device
    /// are replaced: retired, each with an `end` that dismisses it at once (one activity per visit and device).
    /// Returns whether a push was enqueued. Beyond the visit's cap, `LedgerError.Code.tooManyActivities`
    /// (`TokenRegistry.admitLiveActivity`).
    public func registerLiveActivity(
        visitId: String, activityId: String, customerId: String?, pushToken: String, environment: PushEnvironment,
        version: Int?, deviceId: String?
    ) -> @Sendable (PostgresConnection) throws -> Bool {
        { c in
            guard let state = try VisitReadModel.state(visitId: visitId, on: c), state.customerId == customerId else {
                throw VisitNotFound()
            }
            try tokens.admitLiveActivity(visitId: visitId, activityId: activityId, deviceId: deviceId, on: c)
            let registration = try tokens.registerLiveActivity(
                visitId: visitId, activityId: activityId, pushToken: pushToken, environment: environment, deviceId: deviceId,
                customerId: state.customerId, on: c)
            if registration == .new { ledger.counted(.active) }
            // The visit's next commands are written with their pushes (else the first batch's targets probe would
            // find this one, and the batch would go again).
            states.targetsRegistered(visits: [visitId])
            var enqueued = false
            if let deviceId {
                let older = try ledger.others(visitId: visitId, deviceId: deviceId, than: activityId, on: c)
                if !older.isEmpty {
                    // Retired first, then their end (which supersedes what was still pending for them): a
                    // `replaced` activity still gets its own end. An ended visit's activities already had theirs.
                    try ledger.retireEnding(visitId: visitId, activityIds: older, as: .replaced, on: c)
                    if let end = PushPlanner.renewal(for: state, rules: rules, now: Int(ledger.now()))?.end {
                        for old in older { try pushes.enqueueCatchUp(end, for: state, activityId: old, on: c) }
                        enqueued = true
                    }
                }
            }
            let behind = version.map { $0 < state.version } ?? true
            if behind {
                let plan = PushPlanner.catchUp(for: state, rules: rules)
                try pushes.enqueueCatchUp(plan, for: state, activityId: activityId, on: c)
            }
            return behind || enqueued
        }
    }

    /// What the app reports from `activityStateUpdates` for an activity of the customer's visit.
    public func reportState(visitId: String, activityId: String, customerId: String?, state: ReportedActivityState)
        -> @Sendable (PostgresConnection) throws -> Void
    {
        { c in
            guard let row = try VisitReadModel.row(visitId: visitId, on: c), row.customerId == customerId else {
                throw VisitNotFound()
            }
            guard try ledger.report(state, visitId: visitId, activityId: activityId, on: c) != .unknown else {
                throw ActivityNotFound()
            }
        }
    }

    /// Forgets a Live Activity of the customer's visit.
    public func forgetLiveActivity(visitId: String, activityId: String, customerId: String?)
        -> @Sendable (PostgresConnection) throws -> Void
    {
        { c in
            guard let row = try VisitReadModel.row(visitId: visitId, on: c), row.customerId == customerId else {
                throw VisitNotFound()
            }
            _ = try tokens.forgetLiveActivity(visitId: visitId, activityId: activityId, on: c)
        }
    }

    /// A device's preferences.
    public func setPreferences(
        customerId: String, deviceId: String, liveActivitiesEnabled: Bool, frequentPushesEnabled: Bool
    ) -> @Sendable (PostgresConnection) throws -> Void {
        { c in
            try tokens.setPreferences(
                customerId: customerId, deviceId: deviceId, liveActivitiesEnabled: liveActivitiesEnabled,
                frequentPushesEnabled: frequentPushesEnabled, on: c)
        }
    }

    /// A device's push-to-start token: the customer's active visits that this device shows nothing of (and
    /// never dismissed) get their start on it. Returns whether a start was enqueued. Beyond the customer's cap,
    /// `LedgerError.Code.tooManyDevices` (`TokenRegistry.admitDevice`).
    public func registerPushToStart(customerId: String, deviceId: String, pushToken: String, environment: PushEnvironment)
        -> @Sendable (PostgresConnection) throws -> Bool
    {
        { c in
            try tokens.admitDevice(customerId: customerId, deviceId: deviceId, on: c)
            try tokens.registerPushToStart(
                customerId: customerId, deviceId: deviceId, pushToken: pushToken, environment: environment, on: c)
            states.targetsRegistered(customer: customerId)
            var started = false
            var after: (Int64, Int64)? = nil
            while true {
                let page = try VisitReadModel.list(.init(customerId: customerId, ended: false, limit: 200, after: after), on: c)
                // The outbox applies the starts per device: none where this device has, had or dismissed an
                // activity of the visit, or while an activity without a device could be on it.
                for row in page.prefix(200) {
                    if let state = try VisitReadModel.state(visitId: row.visitId, on: c),
                        let plan = PushPlanner.lateStart(for: state, rules: rules),
                        try pushes.enqueueLateStart(plan, for: state, deviceId: deviceId, on: c)
                    {
                        started = true
                    }
                }
                guard page.count > 200, let last = page.prefix(200).last else { break }
                after = (last.scheduledAt, last.booked)
            }
            return started
        }
    }

    /// A device's ordinary APNs token (contract §9): the fallback notifications go to it. Beyond the customer's
    /// cap, `LedgerError.Code.tooManyDevices`.
    public func registerNotificationToken(
        customerId: String, deviceId: String, pushToken: String, environment: PushEnvironment
    ) -> @Sendable (PostgresConnection) throws -> Void {
        { c in
            try tokens.admitDevice(customerId: customerId, deviceId: deviceId, on: c)
            try tokens.register(
                .notificationDevice(customerId: customerId, deviceId: deviceId), pushToken: pushToken,
                environment: environment, on: c)
            states.targetsRegistered(customer: customerId)
        }
    }

    public func forgetNotificationToken(customerId: String, deviceId: String) -> @Sendable (PostgresConnection) throws -> Void {
        { c in _ = try tokens.forget(.notificationDevice(customerId: customerId, deviceId: deviceId), on: c) }
    }

    public func forgetPushToStart(customerId: String, deviceId: String) -> @Sendable (PostgresConnection) throws -> Void {
        { c in _ = try tokens.forgetPushToStart(customerId: customerId, deviceId: deviceId, on: c) }
    }
}
