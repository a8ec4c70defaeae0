import Postgres
import Runtime

/// The write side of push delivery. `enqueue` runs inside the caller's transaction (the one that appends
/// the event and updates the read model) and fans each `PushIntent` out into one `deliveries` row per
/// target with its own apns-id; `committed()` then wakes the workers once per burst.
///
///     let outbox = Outbox(pool: pool)
///     try await pool.withTransaction { c in
///         … append the event, update the read model …
///         try outbox.enqueue(intents, on: c)
///     }
///     outbox.committed()
public final class Outbox: Sendable {
    /// The channel workers LISTEN on.
    public static let channel = "livevisits_outbox"

    public let configuration: OutboxConfiguration
    private let clock: any WallClock
    private let pool: PostgresPool

    public init(
        pool: PostgresPool, configuration: OutboxConfiguration = OutboxConfiguration(), clock: any WallClock = SystemClock()
    ) {
        self.configuration = configuration
        self.clock = clock
        self.pool = pool
    }

    /// What one `enqueue` did.
    public struct EnqueueResult: Sendable, Hashable {
        /// Deliveries created (one per intent and target).
        public var created: Int = 0
        /// Older undelivered updates of the same targets replaced by the new ones.
        public var superseded: Int = 0
        /// Pending starts cancelled because their visit ended first.
        public var cancelledStarts: Int = 0

        mutating func add(_ other: EnqueueResult) {
            created += other.created
            superseded += other.superseded
            cancelledStarts += other.cancelledStarts
        }
    }

    /// Fans the intents out into deliveries, on a connection inside the caller's transaction.
    ///
    /// Only which targets exist is resolved here (registered, live activities; push-to-start devices),
    /// never the token, which is read at send time. Devices with Live Activities switched off get
    /// nothing; nothing is enqueued for a target after its `end`, at most one `start` per visit and
    /// push-to-start token, and nothing older than what a target already has pending or received. A new delivery
    /// supersedes the target's older pending updates, and a newer start the target's start still waiting
    /// to go out (never an end, never a start that may have gone out). Call `committed()` after COMMIT.
    @discardableResult
    public func enqueue(_ intents: [PushIntent], on connection: PostgresConnection) throws -> EnqueueResult {
        var result = EnqueueResult()
        for rows in try connection.pipeline(try enqueueStatements(intents)) {
            result.add(try Outbox.enqueueResult(rows))
        }
        return result
    }

    /// The statements of `enqueue`, one per intent, for a caller that runs them in the same round trip as
    /// its own writes (`PostgresConnection.pipeline`); `enqueueResult` reads what each did.
    public func enqueueStatements(_ intents: [PushIntent]) throws -> [PostgresQuery] {
        let now = clock.now()
        return try intents.map { intent in
            try Outbox.validate(intent)
            return Outbox.enqueueQuery(intent, now: now, due: dueTime(of: intent, now: now), configuration: configuration)
        }
    }

    /// What one enqueue statement did.
    public static func enqueueResult(_ rows: PostgresRows) throws -> EnqueueResult {
        guard let row = rows.first else { return EnqueueResult() }
        return EnqueueResult(
            created: try row.int("created"), superseded: try row.int("superseded"), cancelledStarts: try row.int("cancelled"))
    }

    /// Wakes idle workers (one NOTIFY per burst, outside any transaction). Call after committing a
    /// transaction that enqueued something.
    public func committed() {
        pool.notifyAfterCommit(Outbox.channel)
    }

    /// When an intent may first be sent: `notBefore`, or for a start the arrival window's start minus
    /// the lead time, and never before now.
    func dueTime(of intent: PushIntent, now: Double) -> Double {
        var due = now
        if let notBefore = intent.notBefore {
            due = max(due, notBefore)
        } else if intent.kind == .start, let windowStart = intent.arrivalWindowStart {
            due = max(due, Double(windowStart) - configuration.startLeadTimeSeconds)
        }
        return due
    }

    static func validate(_ intent: PushIntent) throws {
        func invalid(_ message: String) -> OutboxError { OutboxError(code: .invalidIntent, message: message) }
        guard intent.priority == 5 || intent.priority == 10 else { throw invalid("apns-priority must be 5 or 10") }
        guard !intent.body.isEmpty else { throw invalid("the push body is empty") }
        guard !intent.visitId.isEmpty, !intent.customerId.isEmpty else { throw invalid("visitId and customerId are required") }
        switch (intent.kind, intent.audience) {
        case (.start, .pushToStartTokens), (.start, .pushToStartDevice), (.start, .pendingStarts), (.start, .renewalStart): break
        case (.update, .liveActivities), (.update, .activity), (.end, .liveActivities), (.end, .activity): break
        case (.alert, .fallbackDevices): break
        default: throw invalid("a \(intent.kind.rawValue) cannot go to that audience")
        }
        if let pacing = intent.pacingSeconds, intent.kind != .update || !(pacing > 0) {
            throw invalid("only updates are paced, by a positive interval")
        }
        if intent.kind == .update && intent.staleDate == nil {
            throw invalid("an update needs its stale date (its apns-expiration)")
        }
    }

    private static func enqueueQuery(
        _ intent: PushIntent, now: Double, due: Double, configuration: OutboxConfiguration
    ) -> PostgresQuery {
        let body = String(decoding: intent.body, as: UTF8.self)
        let kind = intent.kind.rawValue
        let targets: PostgresQuery
        switch intent.audience {
        case .liveActivities, .activity:
            var activity: String? = nil
            if case .activity(let id) = intent.audience { activity = id }
            targets = """
                SELECT 'activity' || json_build_array(la.visit_id, la.activity_id)::text AS target,
                       la.activity_id, la.device_id
                FROM live_activities la
                LEFT JOIN device_preferences p ON p.customer_id = \(intent.customerId) AND p.device_id = la.device_id
                WHERE la.visit_id = \(intent.visitId) AND la.retired_at_ms IS NULL
                  AND COALESCE(p.live_activities_enabled, true)
                  AND (\(activity)::text IS NULL OR la.activity_id = \(activity))
                UNION ALL
                -- Contract §7: every state change of the visit also goes once to each of its broadcast
                -- channels (a target like any other: superseding, "never after an end", budget per channel).
                SELECT ch.target, NULL::text, NULL::text
                FROM channels ch
                WHERE \(activity)::text IS NULL AND ch.visit_id = \(intent.visitId) AND ch.state = 'active'
                """
        case .pushToStartTokens, .pushToStartDevice, .renewalStart:
            var device: String? = nil
            if case .pushToStartDevice(let id) = intent.audience { device = id }
            // A renewal's start targets are its own: the visit's first start to the token must not block it.
            var startsOf = intent.visitId
            if case .renewalStart(let key) = intent.audience { startsOf += " renewal " + key }
            // One target per visit and push-to-start token (contract §6), named by the token's md5
            // (`delivery_start_target`, migration 0007): a token registered under two device ids is one
            // target (the newest registration's device is used), a rotated token a new one.
            targets = """
                SELECT DISTINCT ON (target) target, activity_id, device_id FROM (
                    SELECT delivery_start_target(\(startsOf)::text, t.push_token) AS target,
                           NULL::text AS activity_id, t.device_id, t.registered_at_ms
                    FROM push_to_start_tokens t
                    LEFT JOIN device_preferences p ON p.customer_id = t.customer_id AND p.device_id = t.device_id
                    WHERE t.customer_id = \(intent.customerId) AND t.retired_at_ms IS NULL
                      AND COALESCE(p.live_activities_enabled, true)
                      AND (\(device)::text IS NULL OR t.device_id = \(device))
                      AND NOT EXISTS (SELECT 1 FROM live_activities la
                                      WHERE la.visit_id = \(intent.visitId) AND la.retired_at_ms IS NULL)
                ) tokens
                ORDER BY target, registered_at_ms DESC
                """
        case .fallbackDevices:
            // One target per visit and device; off wins (a device with Live Activities off gets the
            // notification even with an activity of the visit).
            targets = """
                SELECT 'alert' || json_build_array(\(intent.visitId)::text, n.customer_id, n.device_id)::text AS target,
                       NULL::text AS activity_id, n.device_id
                FROM notification_tokens n
                LEFT JOIN device_preferences p ON p.customer_id = n.customer_id AND p.device_id = n.device_id
                WHERE n.customer_id = \(intent.customerId) AND n.retired_at_ms IS NULL
                  AND (NOT COALESCE(p.live_activities_enabled, true)
                       OR (NOT EXISTS (SELECT 1 FROM push_to_start_tokens s
                                       WHERE s.customer_id = n.customer_id AND s.device_id = n.device_id
                                         AND s.retired_at_ms IS NULL)
                           AND NOT EXISTS (SELECT 1 FROM live_activities la
                                           WHERE la.visit_id = \(intent.visitId) AND la.device_id = n.device_id
                                             AND la.retired_at_ms IS NULL)))
                """
        case .pendingStarts:
            // The waiting starts' own targets (so a start enqueued for a token rotated since is not
            // re-planned for the new one: it is cancelled at claim, and the new token has its own).
            targets = """
                SELECT DISTINCT d.target, NULL::text AS activity_id, d.device_id
                FROM deliveries d
                WHERE d.visit_id = \(intent.visitId) AND d.kind = 'start' AND d.state = 'pending'
                  AND d.outcome_unknown_since IS NULL
                  AND NOT EXISTS (SELECT 1 FROM live_activities la
                                  WHERE la.visit_id = \(intent.visitId) AND la.retired_at_ms IS NULL)
                """
        }
        let pacing = intent.pacingSeconds
        let expires =
            intent.expiresAfterSendingSeconds ?? (intent.kind == .update ? nil : configuration.startEndExpirationSeconds)
        return """
            WITH targets AS (\(targets)),
            fresh AS (
                -- Scalar subqueries: each runs per target on its index whatever the statistics say.
                SELECT t.* FROM targets t
                WHERE NOT (SELECT EXISTS (
                        SELECT 1 FROM deliveries d
                        WHERE d.target = t.target AND d.kind IN ('start', 'end') AND d.state IN ('pending', 'sending', 'sent')
                          AND (d.kind = 'end' OR (d.kind = 'start' AND \(kind)::text = 'start'
                               -- An older start still waiting, known not to have gone out, is replaced.
                               AND NOT (d.state = 'pending' AND d.outcome_unknown_since IS NULL
                                        AND d.aps_timestamp < \(intent.apsTimestamp)::bigint)))))
                  AND NOT (SELECT EXISTS (
                        SELECT 1 FROM deliveries d
                        WHERE d.target = t.target AND d.state IN ('pending', 'sending')
                          AND d.aps_timestamp > \(intent.apsTimestamp)::bigint))
                  AND NOT (SELECT EXISTS (
                        SELECT 1 FROM delivery_targets x
                        WHERE x.target = t.target AND x.last_sent_timestamp > \(intent.apsTimestamp)::bigint))
            ),
            inserted AS (
                INSERT INTO deliveries (apns_id, target, visit_id, customer_id, activity_id, device_id, kind, priority,
                                        aps_timestamp, body, stale_date, expires_after_sending, visit_version,
                                        event_recorded_at, created_at, next_attempt_at, paced_seconds)
                SELECT gen_random_uuid(), f.target, \(intent.visitId), \(intent.customerId), f.activity_id, f.device_id,
                       \(kind), \(intent.priority)::integer, \(intent.apsTimestamp)::bigint, \(body), \(intent.staleDate)::bigint,
                       \(expires)::bigint, \(intent.visitVersion)::bigint, \(intent.eventRecordedAt)::float8, \(now)::float8,
                       -- Paced (contract §8): not before the interval since the target's last paced send (acknowledged,
                       -- or on the wire now) has passed. GREATEST ignores the NULLs of a target without one.
                       CASE WHEN \(pacing)::float8 IS NULL THEN \(due)::float8 ELSE GREATEST(\(due)::float8,
                           (SELECT x.last_paced_at FROM delivery_targets x WHERE x.target = f.target) + \(pacing)::float8,
                           -- (OFFSET 0: along the target's open rows, not a scan of every row on the wire.)
                           (SELECT max(o.claimed_at) FROM (SELECT x.claimed_at, x.state, x.paced_seconds FROM deliveries x
                                                           WHERE x.target = f.target AND x.state IN ('pending', 'sending')
                                                           OFFSET 0) o
                            WHERE o.state = 'sending' AND o.paced_seconds IS NOT NULL)
                               + \(pacing)::float8) END,
                       \(pacing)::float8
                FROM fresh f
                RETURNING id, target
            ),
            superseded AS (
                UPDATE deliveries d
                SET state = 'superseded', superseded_by = (SELECT i.id FROM inserted i WHERE i.target = d.target LIMIT 1),
                    finished_at = \(now)::float8
                -- Per new row, its target's open rows along deliveries_open_by_target (the predicate spelled as the
                -- index's), then those rows by primary key. OFFSET 0 keeps the probe per row and the ids an array:
                -- as a join, the planner (sure that `inserted` and the open rows are tiny) drove the update from a
                -- scan of every pending row, or of every entry, dead ones too, of the open-rows index: 1,000
                -- buffers a statement under load instead of a handful.
                WHERE d.id = ANY (ARRAY(
                        SELECT open.id FROM inserted i
                        CROSS JOIN LATERAL (SELECT x.id FROM deliveries x
                                            WHERE x.target = i.target AND x.state IN ('pending', 'sending')
                                            OFFSET 0) open))
                  AND d.state = 'pending'
                  AND (d.kind = 'update' OR (d.kind = 'start' AND d.outcome_unknown_since IS NULL))
                RETURNING d.id
            ),
            cancelled AS (
                UPDATE deliveries d
                SET state = 'cancelled', last_reason = 'visit ended before the start was sent',
                    finished_at = \(now)::float8
                WHERE \(kind)::text = 'end' AND d.visit_id = \(intent.visitId) AND d.kind = 'start' AND d.state = 'pending'
                RETURNING d.id
            )
            SELECT (SELECT count(*) FROM inserted) AS created, (SELECT count(*) FROM superseded) AS superseded,
                   (SELECT count(*) FROM cancelled) AS cancelled
            """
    }
}
