import Postgres
import Runtime

/// The Live Activity ledger: one record per activity of a visit — what each customer device shows — kept in
/// `live_activities` beside the activity's token, and the `starting` devices a start went to. It changes only
/// by the events that change an activity (registration, the app's state reports, renewal, lapse,
/// replacement, a refused token); every delivery rule reads it (starts per device, fallbacks, renewal).
///
/// Functions on a connection, so they join the caller's transaction. Never returns a token.
public struct LiveActivityLedger: Sendable {
    /// The rules the ledger applies (from the projection rules; see `ProjectionRules`).
    public struct Settings: Sendable, Hashable {
        /// An activity of a still-active visit is renewed this long after it began.
        public var renewalSeconds: Double
        /// An activity that is not renewed lapses this long after it began (iOS's 8 hours).
        public var lifetimeSeconds: Double
        /// A visit's activities are renewed at most this many times along a device's chain.
        public var maxRenewals: Int
        /// Priority-10 allowance per target and hour; `…Frequent` for a device with frequent pushes on.
        public var priority10PerHour: Int
        public var priority10PerHourFrequent: Int

        public init(
            renewalSeconds: Double = 27_000, lifetimeSeconds: Double = 28_800, maxRenewals: Int = 2,
            priority10PerHour: Int = 12, priority10PerHourFrequent: Int = 48
        ) {
            self.renewalSeconds = renewalSeconds
            self.lifetimeSeconds = lifetimeSeconds
            self.maxRenewals = maxRenewals
            self.priority10PerHour = priority10PerHour
            self.priority10PerHourFrequent = priority10PerHourFrequent
        }
    }

    public let settings: Settings
    public let tokens: TokenRegistry
    private let clock: any WallClock
    private let metrics: Metrics

    /// - Parameter tokenProtection: how its registry keeps tokens at rest (`TokenRegistry.protection`).
    public init(
        settings: Settings = Settings(), clock: any WallClock = SystemClock(), metrics: Metrics = .shared,
        tokenProtection: (any PushTokenProtection)? = nil
    ) {
        self.settings = settings
        self.clock = clock
        self.metrics = metrics
        self.tokens = TokenRegistry(clock: clock, protection: tokenProtection)
    }

    /// The ledger's time (epoch seconds): when a change it makes happens.
    public func now() -> Double { clock.now() }

    /// Counts one change of the ledger (`livevisits_live_activity_changes_total{state}`).
    public func counted(_ state: LiveActivityState, by n: Int = 1) {
        guard n > 0 else { return }
        metrics.increment(
            "livevisits_live_activity_changes_total",
            help: "Changes of the Live Activity ledger, by the state an activity entered.",
            labels: ["state": state.rawValue], by: Double(n))
    }

    // MARK: what the app reports

    /// What a state report did.
    public enum ReportOutcome: Sendable, Hashable {
        /// No such activity of the visit.
        case unknown
        /// The activity is retired, or already in that state: nothing changed.
        case unchanged
        /// The activity entered the state.
        case changed(LiveActivityState)
    }

    /// Records what the app reported from `activityStateUpdates`. `ended` and `dismissed` retire the
    /// activity (its pending pushes are cancelled; a dismissal also withholds the visit's starts and fallback
    /// notifications from its device); `active` and `stale` are noted. The same report twice is one change; a
    /// report for a retired activity changes nothing.
    public func report(
        _ state: ReportedActivityState, visitId: String, activityId: String, on connection: PostgresConnection
    ) throws -> ReportOutcome {
        guard
            let row = try connection.query(
                """
                SELECT retired_at_ms IS NOT NULL AS retired, reported_state FROM live_activities
                WHERE visit_id = \(visitId) AND activity_id = \(activityId)
                FOR UPDATE
                """
            ).first
        else { return .unknown }
        guard !(try row.bool("retired")) else { return .unchanged }
        let outcome: ReportOutcome
        if let retirement = state.retirement {
            let retired = try tokens.retire(
                .liveActivity(visitId: visitId, activityId: activityId), token: nil, reason: retirement,
                notRegisteredAfterMs: nil, on: connection)
            outcome = retired ? .changed(LiveActivityState(retiredReason: retirement.rawValue)) : .unchanged
        } else if row["reported_state"] == state.rawValue {
            outcome = .unchanged
        } else {
            try connection.query(
                """
                UPDATE live_activities SET reported_state = \(state.rawValue)
                WHERE visit_id = \(visitId) AND activity_id = \(activityId) AND retired_at_ms IS NULL
                """)
            outcome = .changed(state == .stale ? .stale : .active)
        }
        if case .changed(let entered) = outcome { counted(entered) }
        return outcome
    }

    // MARK: one activity per visit and device

    /// The other live activities of the visit on `deviceId`: a newer one registered there replaces them.
    public func others(visitId: String, deviceId: String, than activityId: String, on connection: PostgresConnection) throws
        -> [String]
    {
        try connection.query(
            """
            SELECT activity_id FROM live_activities
            WHERE visit_id = \(visitId) AND device_id = \(deviceId) AND activity_id <> \(activityId)
              AND retired_at_ms IS NULL
            ORDER BY activity_id
            """
        ).map { try $0.string("activity_id") }
    }

    /// Retires activities the server ends itself (`renewed`, `replaced`) without cancelling what is pending
    /// for them: their own `end`, enqueued in the same transaction, still goes.
    public func retireEnding(
        visitId: String, activityIds: [String], as reason: TokenRegistry.RetirementReason, on connection: PostgresConnection
    ) throws {
        guard !activityIds.isEmpty else { return }
        let nowMs = Int64((clock.now() * 1000).rounded(.down))
        let retired = try connection.query(
            """
            UPDATE live_activities SET retired_at_ms = \(nowMs), retired_reason = \(reason.rawValue)
            WHERE visit_id = \(visitId) AND activity_id = ANY (\(activityIds)::text[]) AND retired_at_ms IS NULL
            """
        ).affectedRows
        counted(LiveActivityState(retiredReason: reason.rawValue), by: retired)
    }

    // MARK: renewal and lapse (the workers' pass)

    /// An activity a renewal pass claimed.
    public struct DueActivity: Sendable, Hashable {
        public var visitId: String
        public var activityId: String
        public var deviceId: String?
        /// Renewals before it in its chain (`maxRenewals` caps them).
        public var renewals: Int
    }

    /// Whether a live activity reached `renewalSeconds` and was never looked at by a renewal pass: one
    /// probe of the partial index `live_activities_renewal_due`, no lock.
    public func renewalDue(now: Double, on connection: PostgresConnection) throws -> Bool {
        try connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM live_activities
                           WHERE renewal_checked_at_ms IS NULL AND retired_at_ms IS NULL
                             AND began_at_ms <= \(milliseconds(now - settings.renewalSeconds))) AS due
            """
        ).first.map { try $0.bool("due") } ?? false
    }

    /// Claims the live activities due for renewal, at most `limit`: each once, whichever worker runs it (one
    /// UPDATE; one not renewed is not looked at again: it lapses).
    public func claimRenewals(now: Double, limit: Int, on connection: PostgresConnection) throws -> [DueActivity] {
        try connection.query(
            """
            UPDATE live_activities la SET renewal_checked_at_ms = \(milliseconds(now))
            FROM (SELECT visit_id, activity_id FROM live_activities
                  WHERE renewal_checked_at_ms IS NULL AND retired_at_ms IS NULL
                    AND began_at_ms <= \(milliseconds(now - settings.renewalSeconds))
                  ORDER BY began_at_ms LIMIT \(limit) FOR UPDATE SKIP LOCKED) due
            WHERE la.visit_id = due.visit_id AND la.activity_id = due.activity_id
            RETURNING la.visit_id, la.activity_id, la.device_id, la.renewals
            """
        ).map {
            DueActivity(
                visitId: try $0.string("visit_id"), activityId: try $0.string("activity_id"), deviceId: $0["device_id"],
                renewals: try $0.int("renewals"))
        }
    }

    /// The devices of the customer a renewal's start can reach: a live push-to-start token, Live Activities on.
    public func pushToStartDevices(customerId: String, on connection: PostgresConnection) throws -> Set<String> {
        Set(
            try connection.query(
                """
                SELECT t.device_id FROM push_to_start_tokens t
                LEFT JOIN device_preferences p ON p.customer_id = t.customer_id AND p.device_id = t.device_id
                WHERE t.customer_id = \(customerId) AND t.retired_at_ms IS NULL AND COALESCE(p.live_activities_enabled, true)
                """
            ).map { try $0.string("device_id") })
    }

    /// Whether `activity` is renewed: under the cap, and a push-to-start device to start its successor on
    /// (its own device, or for an activity without a device any of the customer's).
    public func renews(_ activity: DueActivity, devices: Set<String>) -> Bool {
        guard activity.renewals < settings.maxRenewals else { return false }
        if let device = activity.deviceId { return devices.contains(device) }
        return !devices.isEmpty
    }

    /// Whether a live activity's lifetime ran out (one probe of `live_activities_live_began`).
    public func lapseDue(now: Double, on connection: PostgresConnection) throws -> Bool {
        try connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM live_activities
                           WHERE retired_at_ms IS NULL AND began_at_ms <= \(milliseconds(now - settings.lifetimeSeconds))) AS due
            """
        ).first.map { try $0.bool("due") } ?? false
    }

    /// Retires the live activities whose lifetime ran out (`lapsed`, at most `limit`): iOS has ended them,
    /// nothing more is pushed to them (their pending pushes are cancelled), and their devices get the
    /// fallback notifications from now on. Returns how many lapsed.
    public func lapse(now: Double, limit: Int, on connection: PostgresConnection) throws -> Int {
        let rows = try connection.query(
            """
            WITH lapsed AS (
                UPDATE live_activities la SET retired_at_ms = \(milliseconds(now)), retired_reason = 'lapsed'
                FROM (SELECT visit_id, activity_id FROM live_activities
                      WHERE retired_at_ms IS NULL AND began_at_ms <= \(milliseconds(now - settings.lifetimeSeconds))
                      ORDER BY began_at_ms LIMIT \(limit) FOR UPDATE SKIP LOCKED) due
                WHERE la.visit_id = due.visit_id AND la.activity_id = due.activity_id
                RETURNING la.visit_id, la.activity_id
            ),
            cancelled AS (
                UPDATE deliveries d SET state = 'cancelled', last_reason = 'the live activity lapsed: not renewed within its lifetime (iOS ends it after 8 hours)',
                       finished_at = \(now)::float8, lease_token = NULL
                FROM lapsed l
                WHERE d.target = 'activity' || json_build_array(l.visit_id, l.activity_id)::text AND d.state = 'pending'
                RETURNING d.id
            )
            SELECT (SELECT count(*) FROM lapsed) AS lapsed, (SELECT count(*) FROM cancelled) AS cancelled
            """)
        let lapsed = try rows.first?.int("lapsed") ?? 0
        counted(.lapsed, by: lapsed)
        return lapsed
    }

    // MARK: reading

    /// What the visit needs from its read model for its ledger.
    public struct VisitFacts: Sendable, Hashable {
        public var visitId: String
        public var customerId: String
        public var ended: Bool
        /// The current state's stale date (epoch seconds), if any.
        public var staleDate: Int64?

        public init(visitId: String, customerId: String, ended: Bool, staleDate: Int64?) {
            self.visitId = visitId
            self.customerId = customerId
            self.ended = ended
            self.staleDate = staleDate
        }
    }

    /// The visit's ledger, newest first: its activities and the devices a start went to that have no activity
    /// of the visit yet.
    public func entries(of visit: VisitFacts, on connection: PostgresConnection) throws -> [LiveActivityEntry] {
        let now = clock.now()
        let pushToStart = try pushToStartDevices(customerId: visit.customerId, on: connection)
        let activities = try connection.query(
            """
            SELECT la.activity_id, la.device_id, la.environment, la.origin, la.reported_state, la.retired_at_ms,
                   la.retired_reason, la.began_at_ms, la.renewals, x.last_sent_timestamp, x.last_sent_at,
                   COALESCE(p.frequent_pushes_enabled, false) AS frequent,
                   (SELECT count(*) FROM deliveries s
                    WHERE s.target = 'activity' || json_build_array(la.visit_id, la.activity_id)::text
                      AND s.state = 'sent' AND s.sent_priority = 10 AND s.finished_at > \(now - 3600)::float8) AS priority10
            FROM live_activities la
            LEFT JOIN delivery_targets x ON x.target = 'activity' || json_build_array(la.visit_id, la.activity_id)::text
            LEFT JOIN device_preferences p ON p.customer_id = \(visit.customerId) AND p.device_id = la.device_id
            WHERE la.visit_id = \(visit.visitId)
            """)
        var entries: [LiveActivityEntry] = try activities.map { row in
            let began = try row.int64("began_at_ms")
            let beganAt = began / 1000
            let live = row["retired_at_ms"] == nil
            let due = DueActivity(
                visitId: visit.visitId, activityId: try row.string("activity_id"), deviceId: row["device_id"],
                renewals: try row.int("renewals"))
            // Stale as the app reported it, or once the visit's stale date passed without a newer state.
            let stale = row["reported_state"] == "stale" || (!visit.ended && (visit.staleDate.map { Double($0) < now } ?? false))
            let state = live ? (stale ? .stale : .active) : LiveActivityState(retiredReason: row["retired_reason"])
            let allowance = try row.bool("frequent") ? settings.priority10PerHourFrequent : settings.priority10PerHour
            return LiveActivityEntry(
                activityId: due.activityId, deviceId: due.deviceId,
                environment: row["environment"].flatMap(PushEnvironment.init(rawValue:)),
                origin: row["origin"].flatMap(LiveActivityOrigin.init(rawValue:)) ?? .app, state: state,
                beganAt: beganAt,
                renewsAt: live && !visit.ended && renews(due, devices: pushToStart)
                    ? beganAt + Int64(settings.renewalSeconds) : nil,
                lapsesAt: live ? beganAt + Int64(settings.lifetimeSeconds) : nil,
                lastTimestamp: row.optionalInt64("last_sent_timestamp"),
                lastAcknowledgedAt: row.optionalDouble("last_sent_at").map { Int64($0) },
                priority10LeftThisHour: max(0, allowance - (try row.int("priority10"))),
                sortTime: Double(began) / 1000)
        }
        // A start acknowledged (or on its way) to a device from which no activity of the visit registered
        // since, until its apns-expiration passes. An activity registered without a device could be the one
        // it started: it ends the device's `starting` too.
        let starting = try connection.query(
            """
            SELECT DISTINCT ON (d.device_id) d.device_id, d.created_at, strpos(d.target, ' renewal ') > 0 AS renewal,
                   t.environment
            FROM deliveries d
            LEFT JOIN push_to_start_tokens t ON t.customer_id = d.customer_id AND t.device_id = d.device_id
            WHERE d.visit_id = \(visit.visitId) AND d.kind = 'start' AND d.state IN ('sending', 'sent')
              AND (d.state = 'sending' OR d.finished_at + COALESCE(d.expires_after_sending, 14400) > \(now)::float8)
              AND NOT EXISTS (SELECT 1 FROM live_activities la
                              WHERE la.visit_id = d.visit_id AND (la.device_id = d.device_id OR la.device_id IS NULL)
                                AND la.began_at_ms >= (d.created_at * 1000)::bigint)
            ORDER BY d.device_id, d.id DESC
            """)
        entries += try starting.map { row in
            LiveActivityEntry(
                activityId: nil, deviceId: row["device_id"],
                environment: row["environment"].flatMap(PushEnvironment.init(rawValue:)),
                origin: try row.bool("renewal") ? .renewal : .pushToStart, state: .starting, beganAt: nil, renewsAt: nil,
                lapsesAt: nil, lastTimestamp: nil, lastAcknowledgedAt: nil, priority10LeftThisHour: nil,
                sortTime: try row.double("created_at"))
        }
        return entries.sorted { ($0.sortTime, $0.activityId ?? "") > ($1.sortTime, $1.activityId ?? "") }
    }

    /// Activities by state across the fleet, for `livevisits_live_activities{state}`: live ones as the app last
    /// reported them (`stale`) or `active`, retired ones by why. (`starting` devices are not rows of their own.)
    public func counts(on connection: PostgresConnection) throws -> [LiveActivityState: Int] {
        var counts: [LiveActivityState: Int] = [:]
        for row in try connection.query(
            """
            SELECT retired_reason, retired_at_ms IS NULL AND reported_state = 'stale' AS stale,
                   retired_at_ms IS NULL AS live, count(*) AS n
            FROM live_activities GROUP BY 1, 2, 3
            """)
        {
            let state: LiveActivityState =
                try row.bool("live")
                ? (try row.bool("stale") ? .stale : .active) : LiveActivityState(retiredReason: row["retired_reason"])
            counts[state, default: 0] += try row.int("n")
        }
        return counts
    }

    /// Adds `livevisits_live_activities{state}`, read from the database at scrape time.
    public func registerCollector(pool: PostgresPool) {
        let ledger = self
        metrics.addCollector {
            guard let counts = try? await pool.withConnection({ try ledger.counts(on: $0) }) else { return "" }
            var text = "# HELP livevisits_live_activities Live Activities by state.\n"
            text += "# TYPE livevisits_live_activities gauge\n"
            for state in LiveActivityState.allCases where state != .starting {
                text += "livevisits_live_activities{state=\"\(state.rawValue)\"} \(counts[state] ?? 0)\n"
            }
            return text
        }
    }

    private func milliseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1000).rounded(.down)) }
}
