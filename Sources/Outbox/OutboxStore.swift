import Foundation
import LiveActivityLedger
import Postgres
import Runtime

/// The `deliveries` table: what operators inspect and requeue, and the worker's claim/complete cycle
/// (each one statement, so one round trip per batch).
public struct OutboxStore: Sendable {
    public let pool: PostgresPool
    private let clock: any WallClock

    public init(pool: PostgresPool, clock: any WallClock = SystemClock()) {
        self.pool = pool
        self.clock = clock
    }

    // MARK: operations

    /// The newest deliveries (by id, descending), optionally in one state.
    public func list(state: DeliveryState? = nil, limit: Int = 100) async throws -> [OutboxDelivery] {
        let statement = OutboxStore.listStatement(state: state, limit: limit)
        return try await pool.withConnection { connection in
            try connection.query(statement).rows.map(OutboxStore.delivery)
        }
    }

    /// The statement of `list(state:limit:)`.
    static func listStatement(state: DeliveryState?, limit: Int) -> PostgresQuery {
        """
        SELECT id, apns_id::text AS apns_id, visit_id, customer_id, activity_id, device_id, kind, state, priority,
               sent_priority, aps_timestamp, visit_version, attempts, created_at, next_attempt_at, finished_at,
               last_status, last_reason
        FROM deliveries \(stateFilter(state))
        ORDER BY id DESC LIMIT \(min(max(limit, 1), 1000))
        """
    }

    /// `WHERE state = '<state>'` (or nothing) with the state written into the statement, not bound: only then
    /// may the planner use a partial index on the rare states (`deliveries_dead_letters`, `webhooks_dead_letters`)
    /// instead of walking every row by id. The text is one of `DeliveryState`'s own names.
    public static func stateFilter(_ state: DeliveryState?) -> PostgresQuery {
        guard let state else { return "" }
        return PostgresQuery(sql: "WHERE state = '\(state.rawValue)'")
    }

    /// One delivery by id.
    /// The columns of a delivery as the operations read it (`OutboxStore.delivery`).
    static let operationColumns: PostgresQuery = """
        id, apns_id::text AS apns_id, visit_id, customer_id, activity_id, device_id, kind, state, priority,
        sent_priority, aps_timestamp, visit_version, attempts, created_at, next_attempt_at, finished_at,
        last_status, last_reason
        """

    public func delivery(id: Int64) async throws -> OutboxDelivery? {
        try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT \(OutboxStore.operationColumns) FROM deliveries WHERE id = \(id)
                """
            ).rows.first.map(OutboxStore.delivery)
        }
    }

    /// Requeues a dead or expired delivery as a new attempt now, with the same apns-id and a fresh
    /// maximum age. An expired update is sent once more with `apns-expiration` = now (delivered at once or
    /// never). It still yields to anything newer its target has received. Wakes no worker by itself:
    /// call `Outbox.committed()` (or wait for the poll).
    @discardableResult
    public func retry(id: Int64) async throws -> OutboxDelivery {
        let now = clock.now()
        // The answer is the row as this update left it: a worker may claim it the moment it commits.
        let requeued = try await pool.withConnection { connection in
            try connection.query(
                """
                UPDATE deliveries
                SET state = 'pending', next_attempt_at = \(now), requeued_at = \(now), finished_at = NULL,
                    finished_xid = NULL,
                    stale_date = CASE WHEN state = 'expired' THEN NULL ELSE stale_date END,
                    expires_after_sending = CASE WHEN state = 'expired' THEN 0 ELSE expires_after_sending END,
                    outcome_unknown_since = NULL
                WHERE id = \(id) AND state IN ('dead', 'expired')
                RETURNING \(OutboxStore.operationColumns)
                """
            ).rows.first.map(OutboxStore.delivery)
        }
        if let requeued { return requeued }
        guard let delivery = try await delivery(id: id) else {
            throw OutboxError(code: .notFound, message: "no delivery \(id)")
        }
        throw OutboxError(
            code: .notRetryable,
            message: "delivery \(id) is \(delivery.state.rawValue); only dead or expired deliveries can be retried")
    }

    /// Every recorded attempt of a delivery, oldest first. The attempt that APNs acknowledged (the one
    /// that made the delivery `sent`) is kept on the delivery row rather than as a `delivery_attempts` row
    /// (`complete`); it is answered from there.
    public func attempts(deliveryId: Int64) async throws -> [DeliveryAttempt] {
        try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT delivery_id, attempt, attempted_at, status, reason, latency_seconds, retry_after_seconds
                FROM delivery_attempts WHERE delivery_id = \(deliveryId)
                UNION ALL
                -- The row's last attempt when it is no attempt row: the acknowledged one. A delivery finished
                -- before migration 0018 (no last_attempt), or found sent after a failed attempt (a start of
                -- unknown outcome), has every attempt as a row.
                SELECT d.id, d.last_attempt, d.last_attempted_at, d.last_status, d.last_reason, d.last_latency_seconds, NULL
                FROM deliveries d
                WHERE d.id = \(deliveryId) AND d.state = 'sent' AND d.last_attempt IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM delivery_attempts a WHERE a.delivery_id = d.id AND a.attempt = d.last_attempt)
                ORDER BY attempt
                """
            ).rows.map { row in
                DeliveryAttempt(
                    deliveryId: try row.int64("delivery_id"), attempt: try row.int("attempt"),
                    attemptedAt: try row.double("attempted_at"), status: row.optionalInt64("status").map(Int.init),
                    reason: row["reason"], latencySeconds: row.optionalDouble("latency_seconds"),
                    retryAfterSeconds: row.optionalDouble("retry_after_seconds"))
            }
        }
    }

    /// How many deliveries are in each state.
    public func depth() async throws -> [DeliveryState: Int] {
        try await pool.withConnection { connection in
            var out: [DeliveryState: Int] = [:]
            for state in DeliveryState.allCases { out[state] = 0 }
            for row in try connection.query("SELECT state, count(*) AS n FROM deliveries GROUP BY state") {
                if let state = DeliveryState(rawValue: try row.string("state")) { out[state] = try row.int("n") }
            }
            return out
        }
    }

    /// Adds `livevisits_outbox_deliveries{state}` to `metrics`, read from the database at scrape time.
    public func registerDepthCollector(metrics: Metrics = .shared) {
        let store = self
        metrics.addCollector {
            guard let depth = try? await store.depth() else { return "" }
            var text = "# HELP livevisits_outbox_deliveries Outbox deliveries by state.\n"
            text += "# TYPE livevisits_outbox_deliveries gauge\n"
            for state in DeliveryState.allCases {
                text += "livevisits_outbox_deliveries{state=\"\(state.rawValue)\"} \(depth[state] ?? 0)\n"
            }
            return text
        }
    }

    static func delivery(_ row: PostgresRow) throws -> OutboxDelivery {
        OutboxDelivery(
            id: try row.int64("id"), apnsId: try row.string("apns_id"), visitId: try row.string("visit_id"),
            customerId: try row.string("customer_id"), activityId: row["activity_id"], deviceId: row["device_id"],
            kind: PushIntent.Kind(rawValue: try row.string("kind")) ?? .update,
            state: DeliveryState(rawValue: try row.string("state")) ?? .pending, priority: try row.int("priority"),
            sentPriority: row.optionalInt64("sent_priority").map(Int.init),
            apsTimestamp: try row.int64("aps_timestamp"), visitVersion: try row.int64("visit_version"),
            attempts: try row.int("attempts"), createdAt: try row.double("created_at"),
            nextAttemptAt: try row.double("next_attempt_at"), finishedAt: row.optionalDouble("finished_at"),
            lastStatus: row.optionalInt64("last_status").map(Int.init), lastReason: row["last_reason"])
    }

    // MARK: the worker's cycle

    /// Claims up to `limit` due deliveries under `lease` (one statement): due, pending, no other delivery of
    /// the same target in flight, and none newer pending for it; `FOR UPDATE SKIP LOCKED`, so concurrent
    /// workers never claim the same row.
    ///
    /// Each priority-10 update also gets its target's priority-10 pushes of the last hour (the budget,
    /// contract §8), counted from the delivery records in the same statement: one index probe per such row,
    /// shared by every worker on the database.
    static func claim(limit: Int, lease: String, leaseSeconds: Double, now: Double, on connection: PostgresConnection) throws
        -> [ClaimedDelivery]
    {
        // Planned once per connection: planning it took longer than running it (1.2-1.5 ms a claim, 70 claims a
        // second beside a fleet). Its generic plan walks the due index in order and stops at the limit, whatever
        // the backlog; what would let a generic plan read a whole table is written out of it: the claimed rows
        // are taken by id from an array (joined to the candidates, they were merged along the whole primary
        // key), and the device's preferences are probed per row (LIMIT 1: not pulled up into a hash over all).
        let claim: PostgresQuery = """
            WITH candidates AS (
                SELECT d.id FROM deliveries d
                WHERE d.state = 'pending' AND d.next_attempt_at <= \(now)
                  -- Nothing while another worker paused sending (an uncorrelated probe: evaluated once).
                  AND NOT (SELECT EXISTS (SELECT 1 FROM outbox_pause WHERE paused_until > \(now)))
                  -- A scalar subquery, so it runs per row along the due index (an anti-join would read the
                  -- whole backlog on every claim).
                  AND NOT (SELECT EXISTS (
                      SELECT 1 FROM deliveries o
                      WHERE o.target = d.target AND o.id <> d.id AND o.state IN ('sending', 'pending')
                        AND (o.state = 'sending' OR o.aps_timestamp > d.aps_timestamp)))
                  -- Cadence (contract §8): a paced update whose target's last paced send is younger than the
                  -- interval is `held` instead (below).
                  AND NOT (d.paced_seconds IS NOT NULL AND COALESCE(
                      (SELECT x.last_paced_at FROM delivery_targets x WHERE x.target = d.target) + d.paced_seconds
                          > \(now), false))
                ORDER BY d.next_attempt_at, d.id
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            ),
            -- The enqueue already sets a paced update's due time from the target's last paced send, but it
            -- cannot see a send that its own snapshot showed still pending (claimed, sent and completed while
            -- the enqueueing transaction ran): the claim, which sees it, moves such an update to the end of
            -- the interval. Along deliveries_paced_due, in its order and a bounded number at a time, so that
            -- it is walked by an index scan: that marks the entries of rows sent since as dead as it passes
            -- them, where a bitmap scan visited each of them again at every claim until a vacuum (hundreds
            -- for a dozen live rows beside a fleet). What is left due goes at the next claim. The rows held are
            -- found by their targets along deliveries_open_by_target, and each one's last paced send is probed by
            -- a scalar subquery, so that the plan (made once) reads those rows whatever the statistics said when
            -- it was made: by id, the update could take deliveries_by_visit (whose second column is the id) or
            -- deliveries_paced_due and walk all of it, and joined to delivery_targets it read that table whole
            -- for each row (a plan made on a small outbox beside a fleet read hundreds of rows a claim).
            due_paced AS (
                SELECT p.target FROM deliveries p
                WHERE p.state = 'pending' AND p.paced_seconds IS NOT NULL AND p.next_attempt_at <= \(now)
                ORDER BY p.next_attempt_at
                LIMIT 1000
            ),
            held AS (
                UPDATE deliveries d
                SET next_attempt_at = (SELECT x.last_paced_at FROM delivery_targets x WHERE x.target = d.target)
                                      + d.paced_seconds
                -- The open rows' index predicate spelled as its own, and the state besides `Outbox.pendingState`.
                WHERE d.target = ANY(ARRAY(SELECT target FROM due_paced))
                  AND d.state IN ('pending', 'sending') AND d.state = \(Outbox.pendingState)
                  AND d.paced_seconds IS NOT NULL AND d.next_attempt_at <= \(now)
                  AND (SELECT x.last_paced_at FROM delivery_targets x WHERE x.target = d.target) + d.paced_seconds
                      > \(now)
            ),
            claimed AS (
                UPDATE deliveries d
                SET state = 'sending', lease_token = \(lease)::uuid, lease_expires_at = \(now + leaseSeconds),
                    claimed_at = \(now), attempts = d.attempts + 1
                WHERE d.id = ANY(ARRAY(SELECT id FROM candidates))
                RETURNING d.*
            )
            SELECT c.id, c.apns_id::text AS apns_id, c.target, c.visit_id, c.customer_id, c.activity_id, c.device_id,
                   c.kind, c.priority, c.aps_timestamp, c.body, c.stale_date, c.expires_after_sending, c.event_recorded_at,
                   -- The maximum age counts from an operator's retry, when there was one.
                   COALESCE(c.requeued_at, c.created_at) AS created_at, c.attempts, c.outcome_unknown_since,
                   tok.push_token, tok.environment, tok.registered_at_ms,
                   -- An activity the server ended (renewed, replaced) is retired for everything but its own end.
                   (tok.retired_at_ms IS NOT NULL
                    AND NOT (c.kind = 'end' AND tok.retired_reason IN ('renewed', 'replaced'))) AS retired,
                   tok.began_at_ms,
                   COALESCE(pref.live_activities_enabled, true) AS enabled,
                   COALESCE(pref.frequent_pushes_enabled, false) AS frequent,
                   CASE WHEN c.kind = 'update' AND c.priority = 10 THEN (
                       SELECT count(*) FROM deliveries s
                       WHERE s.target = c.target AND s.state = 'sent' AND s.sent_priority = 10
                         AND s.finished_at > \(now - 3600)::float8)
                   ELSE 0 END AS priority10_last_hour,
                   (SELECT t.last_sent_timestamp FROM delivery_targets t WHERE t.target = c.target) AS last_sent_timestamp,
                   -- A start names the token it was enqueued for (its target ends with the token's look-up hash,
                   -- also a renewal's); one rotated since has a start of its own.
                   (c.kind = 'start' AND tok.push_token IS NOT NULL
                    AND c.target NOT LIKE '%"' || tok.token_hash || '"]') AS token_replaced,
                   -- A start goes only while its device shows no activity of the visit, did not dismiss one, and
                   -- had none since the start was planned; and while no activity without a device (it could be
                   -- on this one) lives (a second start, a second activity).
                   (c.kind = 'start' AND (SELECT EXISTS (
                        SELECT 1 FROM live_activities r
                        WHERE r.visit_id = c.visit_id
                          AND ((r.device_id IS NULL AND r.retired_at_ms IS NULL)
                               OR (r.device_id = c.device_id
                                   AND (r.retired_at_ms IS NULL OR r.retired_reason = 'dismissed'
                                        OR r.began_at_ms >= (COALESCE(c.requeued_at, c.created_at) * 1000)::bigint))))))
                       AS visit_has_activity,
                   (c.outcome_unknown_since IS NOT NULL AND (SELECT EXISTS (
                        SELECT 1 FROM live_activities r
                        WHERE r.visit_id = c.visit_id AND r.retired_at_ms IS NULL
                          AND (r.device_id IS NULL OR r.device_id = c.device_id)
                          AND r.registered_at_ms >= (c.outcome_unknown_since * 1000)::bigint))) AS registered_since
            FROM claimed c
            -- LATERAL with LIMIT: one index probe per claimed row, never a join over every token.
            LEFT JOIN LATERAL (
                SELECT la.push_token, COALESCE(la.token_hash, md5(la.push_token)) AS token_hash, la.environment, la.registered_at_ms, la.retired_at_ms, la.began_at_ms, la.retired_reason
                FROM live_activities la
                WHERE c.kind IN ('update', 'end') AND la.visit_id = c.visit_id AND la.activity_id = c.activity_id
                UNION ALL
                SELECT st.push_token, COALESCE(st.token_hash, md5(st.push_token)), st.environment, st.registered_at_ms, st.retired_at_ms, NULL::bigint, NULL::text
                FROM push_to_start_tokens st
                WHERE c.kind = 'start' AND st.customer_id = c.customer_id AND st.device_id = c.device_id
                UNION ALL
                SELECT n.push_token, COALESCE(n.token_hash, md5(n.push_token)), n.environment, n.registered_at_ms, n.retired_at_ms, NULL::bigint, NULL::text
                FROM notification_tokens n
                WHERE c.kind = 'alert' AND n.customer_id = c.customer_id AND n.device_id = c.device_id
                UNION ALL
                -- A broadcast channel's id stands where a token does (contract §7); a forgotten channel has no row.
                SELECT ch.channel_id, NULL::text, ch.environment, NULL::bigint, NULL::bigint, NULL::bigint, NULL::text
                FROM channels ch
                WHERE c.kind IN ('update', 'end') AND c.activity_id IS NULL AND ch.visit_id = c.visit_id
                  AND ch.target = c.target AND ch.channel_id IS NOT NULL
                LIMIT 1
            ) tok ON true
            LEFT JOIN LATERAL (
                SELECT p.live_activities_enabled, p.frequent_pushes_enabled FROM device_preferences p
                WHERE p.customer_id = c.customer_id AND p.device_id = c.device_id
                LIMIT 1
            ) pref ON true
            ORDER BY c.id
            """
        let rows = try connection.query(claim.plannedOnce())
        return try rows.rows.map { row in
            ClaimedDelivery(
                id: try row.int64("id"), apnsId: try row.string("apns_id"), target: try row.string("target"),
                visitId: try row.string("visit_id"), customerId: try row.string("customer_id"),
                activityId: row["activity_id"], deviceId: row["device_id"],
                kind: PushIntent.Kind(rawValue: try row.string("kind")) ?? .update, priority: try row.int("priority"),
                apsTimestamp: try row.int64("aps_timestamp"), body: Array(try row.string("body").utf8),
                staleDate: row.optionalInt64("stale_date"), expiresAfterSending: row.optionalInt64("expires_after_sending"),
                eventRecordedAt: try row.double("event_recorded_at"), createdAt: try row.double("created_at"),
                attempt: try row.int("attempts"), outcomeUnknownSince: row.optionalDouble("outcome_unknown_since"),
                pushToken: row["push_token"], environment: row["environment"].flatMap(PushEnvironment.init(rawValue:)),
                registeredAtMs: row.optionalInt64("registered_at_ms"), activityBeganAtMs: row.optionalInt64("began_at_ms"),
                tokenRetired: try row.bool("retired"),
                liveActivitiesEnabled: try row.bool("enabled"), frequentPushesEnabled: try row.bool("frequent"),
                priority10SentLastHour: try row.int("priority10_last_hour"),
                lastSentTimestamp: row.optionalInt64("last_sent_timestamp"),
                startTokenReplaced: try row.bool("token_replaced"), visitHasLiveActivity: try row.bool("visit_has_activity"),
                activityRegisteredSinceUnknown: try row.bool("registered_since"))
        }
    }

    /// Ends the lease of a batch (one statement), fenced by the lease token: a worker whose lease was taken
    /// over changes nothing. Attempts are recorded either way (they happened): on the delivery row
    /// (`last_attempt`, `last_attempted_at`, `last_status`, `last_reason`, `last_latency_seconds`)
    /// whenever the completion applies, and as a `delivery_attempts` row unless it is the acknowledged
    /// attempt that made the delivery `sent` (the common case, kept on the delivery row alone: no insert,
    /// no index entry, no foreign-key check). Targets remember the newest `aps.timestamp` they
    /// acknowledged. An acknowledged attempt's `apns-unique-id` and a broadcast's channel id are kept on the
    /// delivery row by the same statement. Returns the ids actually completed.
    ///
    /// With `findingNextDue`, the same round trip then reads `nextDue` as the completion left it (a worker about
    /// to wait learns when to claim next without a round trip of its own); `nextDue` is nil otherwise.
    static func complete(
        _ completions: [DeliveryCompletion], lease: String, now: Double, findingNextDue: Bool = false,
        on connection: PostgresConnection
    ) throws -> (completed: Set<Int64>, nextDue: NextDue?) {
        guard !completions.isEmpty else {
            return ([], findingNextDue ? NextDue(at: try nextDue(on: connection)) : nil)
        }
        let ids = PostgresBinaryArray(completions.map(\.id))
        let states = PostgresBinaryArray(completions.map(\.state.rawValue))
        let next = PostgresBinaryArray(completions.map(\.nextAttemptAt))
        let statuses = PostgresBinaryArray(completions.map(\.status))
        let reasons = PostgresBinaryArray(completions.map(\.reason))
        let unknown = PostgresBinaryArray(completions.map(\.outcomeUnknownSince))
        let attempts = PostgresBinaryArray(completions.map(\.attempt))
        let attemptedAt = PostgresBinaryArray(completions.map(\.attemptedAt))
        let latencies = PostgresBinaryArray(completions.map(\.latency))
        let retryAfters = PostgresBinaryArray(completions.map(\.retryAfter))
        let sentPriorities = PostgresBinaryArray(completions.map(\.sentPriority))
        let uniqueIds = PostgresBinaryArray(completions.map(\.uniqueId))
        let channelIds = PostgresBinaryArray(completions.map(\.channelId))
        // Each completed row by its primary key, one probe per input row. The lease and state the rows must
        // still have travel as columns of `input`, so they are join conditions, not restrictions: as
        // restrictions (`state = 'sending' AND lease_token = …`, a handful of rows by the statistics) the
        // planner would scan the rows on the wire and join the batch to them by a nested loop over `input`,
        // quadratic in the batch. So formed, the plan is the same whatever the batch's size (input by primary
        // key, a nested loop): it is planned once per connection, not for the values of each batch.
        let statement: PostgresQuery = """
            WITH input AS (
                SELECT x.*, \(lease)::uuid AS lease, 'sending'::text AS held
                FROM unnest(\(ids)::bigint[], \(states)::text[], \(next)::float8[], \(statuses)::int[],
                            \(reasons)::text[], \(unknown)::float8[], \(attempts)::int[], \(attemptedAt)::float8[],
                            \(latencies)::float8[], \(retryAfters)::float8[], \(sentPriorities)::int[],
                            \(uniqueIds)::uuid[], \(channelIds)::text[])
                    AS x(id, state, next_attempt_at, status, reason, unknown_since, attempt, attempted_at, latency, retry_after,
                         sent_priority, unique_id, channel_id)
            ),
            done AS (
                UPDATE deliveries d
                SET state = i.state,
                    next_attempt_at = COALESCE(i.next_attempt_at, d.next_attempt_at),
                    last_status = CASE WHEN i.attempt IS NULL THEN d.last_status ELSE i.status END,
                    last_reason = COALESCE(i.reason, CASE WHEN i.attempt IS NULL THEN d.last_reason END),
                    last_attempt = COALESCE(i.attempt, d.last_attempt),
                    last_attempted_at = CASE WHEN i.attempt IS NULL THEN d.last_attempted_at ELSE i.attempted_at END,
                    last_latency_seconds = CASE WHEN i.attempt IS NULL THEN d.last_latency_seconds ELSE i.latency END,
                    outcome_unknown_since = CASE WHEN i.state = 'pending' THEN i.unknown_since ELSE d.outcome_unknown_since END,
                    finished_at = CASE WHEN i.state = 'pending' THEN NULL ELSE \(now)::float8 END,
                    -- While webhooks are on, the outcomes they report carry their transaction: the position the
                    -- webhook worker reads finished deliveries by (migration 0036). The setting is read once
                    -- per statement.
                    finished_xid = CASE WHEN i.state IN ('sent', 'dead', 'expired') AND (SELECT enabled FROM webhook_settings)
                                        THEN pg_current_xact_id() END,
                    sent_priority = COALESCE(i.sent_priority, d.sent_priority),
                    apns_unique_id = COALESCE(i.unique_id, d.apns_unique_id),
                    channel_id = COALESCE(i.channel_id, d.channel_id),
                    lease_token = NULL, lease_expires_at = NULL
                FROM input i
                WHERE d.id = i.id AND d.lease_token = i.lease AND d.state = i.held
                RETURNING d.id, d.target, d.aps_timestamp, d.state, d.claimed_at, d.paced_seconds
            ),
            recorded AS (
                INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, status, reason, latency_seconds, retry_after_seconds)
                SELECT i.id, i.attempt, i.attempted_at, i.status, i.reason, i.latency, i.retry_after FROM input i
                WHERE i.attempt IS NOT NULL
                  -- The acknowledged attempt lives on the delivery row (`attempts(deliveryId:)`); a worker whose
                  -- lease was taken over did not update that row, so its attempt is a row whatever the answer.
                  AND NOT (i.state = 'sent' AND i.id IN (SELECT id FROM done))
                ON CONFLICT DO NOTHING
            ),
            marked AS (
                INSERT INTO delivery_targets (target, last_sent_timestamp, last_paced_at, last_sent_at)
                SELECT target, max(aps_timestamp), max(claimed_at) FILTER (WHERE paced_seconds IS NOT NULL), \(now)::float8
                FROM done WHERE state = 'sent' GROUP BY target
                ON CONFLICT (target) DO UPDATE
                SET last_sent_timestamp = GREATEST(delivery_targets.last_sent_timestamp, EXCLUDED.last_sent_timestamp),
                    last_paced_at = GREATEST(delivery_targets.last_paced_at, EXCLUDED.last_paced_at),
                    last_sent_at = EXCLUDED.last_sent_at
            )
            SELECT id FROM done
            """
        let results = try connection.pipeline(
            [statement.plannedOnce()] + (findingNextDue ? [nextDueStatement] : []))
        let completed = Set(try results[0].rows.map { try $0.int64("id") })
        return (completed, findingNextDue ? NextDue(at: results[1].first?.optionalDouble("due")) : nil)
    }

    /// When a delivery is next due, as one statement learned it: `at` nil when nothing is pending.
    struct NextDue: Sendable {
        let at: Double?
    }

    /// Renews a batch's lease.
    static func heartbeat(lease: String, leaseSeconds: Double, now: Double, on connection: PostgresConnection) throws {
        try connection.query(
            """
            UPDATE deliveries SET lease_expires_at = \(now + leaseSeconds)
            WHERE lease_token = \(lease)::uuid AND state = 'sending'
            """)
    }

    /// Gives the deliveries of a released lease back (graceful shutdown before sending).
    static func release(ids: [Int64], lease: String, on connection: PostgresConnection) throws {
        guard !ids.isEmpty else { return }
        try connection.query(
            """
            UPDATE deliveries SET state = 'pending', lease_token = NULL, lease_expires_at = NULL, attempts = attempts - 1
            WHERE id = ANY(\(ids)::bigint[]) AND lease_token = \(lease)::uuid AND state = 'sending'
            """)
    }

    /// Makes deliveries whose lease ran out (their worker died) claimable again. A start among them may
    /// have reached APNs: its outcome becomes unknown and it waits for the grace period, after which it
    /// is resent only if no Live Activity of its visit registered meanwhile.
    static func reapExpiredLeases(now: Double, startGraceSeconds: Double, on connection: PostgresConnection) throws -> Int {
        try connection.query(
            """
            UPDATE deliveries
            SET state = 'pending', lease_token = NULL, lease_expires_at = NULL,
                outcome_unknown_since = CASE WHEN kind = 'start' THEN COALESCE(outcome_unknown_since, claimed_at)
                                             ELSE outcome_unknown_since END,
                next_attempt_at = CASE WHEN kind = 'start' THEN GREATEST(\(now), claimed_at + \(startGraceSeconds))
                                       ELSE \(now) END,
                last_reason = 'lease expired'
            WHERE state = 'sending' AND lease_expires_at < \(now)
            """
        ).affectedRows
    }

    /// When the next pending delivery falls due (nil when none is pending), never before a shared pause ends.
    static func nextDue(on connection: PostgresConnection) throws -> Double? {
        try connection.query(nextDueStatement).first?.optionalDouble("due")
    }

    /// (`min` alone, so it is one probe at the start of `deliveries_due`, not a count of every pending row.)
    private static let nextDueStatement: PostgresQuery = """
        SELECT GREATEST(m.due, (SELECT paused_until FROM outbox_pause)) AS due
        FROM (SELECT min(next_attempt_at) AS due FROM deliveries WHERE state = 'pending') m
        WHERE m.due IS NOT NULL
        """

    /// Pauses sending for every worker on the database until `until` (a configuration error); a pause
    /// already running longer is kept.
    static func pause(until: Double, reason: String, now: Double, on connection: PostgresConnection) throws {
        try connection.query(
            """
            INSERT INTO outbox_pause (singleton, paused_until, paused_at, reason) VALUES (true, \(until), \(now), \(reason))
            ON CONFLICT (singleton) DO UPDATE
            SET paused_until = GREATEST(EXCLUDED.paused_until, outbox_pause.paused_until), paused_at = EXCLUDED.paused_at, reason = EXCLUDED.reason
            """)
    }
}
