import Foundation
import Outbox
import Postgres
import Runtime

/// The `webhooks` table: the switch the triggers read, the worker's claim/complete cycle (one statement
/// each), and what operators list and requeue.
public struct WebhookStore: Sendable {
    public let pool: PostgresPool
    private let clock: any WallClock

    public init(pool: PostgresPool, clock: any WallClock = SystemClock()) {
        self.pool = pool
        self.clock = clock
    }

    /// Turns the writing of webhook rows on or off for the whole database (every `serve`/`worker` process sets
    /// it at start from its configuration). Switched on, deliveries are reported from the ones finishing then.
    public func setEnabled(_ enabled: Bool) async throws {
        _ = try await pool.query(
            """
            UPDATE webhook_settings
            SET enabled = \(enabled),
                deliveries_xid = CASE WHEN \(enabled) THEN pg_snapshot_xmax(pg_current_snapshot()) ELSE deliveries_xid END,
                deliveries_id = CASE WHEN \(enabled) THEN 0 ELSE deliveries_id END
            WHERE enabled <> \(enabled)
            """)
    }

    /// Turns up to `limit` deliveries that reached a reported final state into webhook rows, in the order they
    /// finished, and moves the cursor past them in the same transaction: `delivery.sent|dead|expired` and, for a
    /// push-to-start device's acknowledged start, `liveActivity.starting` (migration 0036). Only deliveries
    /// stamped by transactions older than every transaction still running are read, so none is skipped.
    /// Nothing while webhooks are off, or while another worker is collecting. Answers how many deliveries it read.
    @discardableResult
    public func collectDeliveryOutcomes(limit: Int) async throws -> Int {
        let at = clock.now()
        let rows = try await pool.query(
            """
            WITH cursor AS (
                SELECT deliveries_xid AS xid, deliveries_id AS id, pg_snapshot_xmin(pg_current_snapshot()) AS horizon
                FROM webhook_settings WHERE enabled AND only_row
                LIMIT 1
                FOR UPDATE SKIP LOCKED
            ), picked AS (
                SELECT d.id, d.finished_xid, d.visit_id, d.state, d.kind, d.finished_at, d.activity_id, d.device_id,
                       d.channel_id, d.apns_id, d.apns_unique_id, d.attempts, d.last_status, d.last_reason
                FROM cursor c
                CROSS JOIN LATERAL (
                    SELECT * FROM deliveries x
                    WHERE x.finished_xid IS NOT NULL AND (x.finished_xid, x.id) > (c.xid, c.id) AND x.finished_xid < c.horizon
                    ORDER BY x.finished_xid, x.id
                    LIMIT \(limit)
                ) d
            ), made AS (
                INSERT INTO webhooks (visit_id, type, occurred_at, data, created_at, next_attempt_at)
                SELECT f.visit_id, f.type, floor(COALESCE(f.finished_at, \(at)::float8))::bigint, f.data,
                       \(at)::float8, \(at)::float8
                FROM (
                    SELECT n.finished_xid, n.id, 0 AS part, n.visit_id, 'delivery.' || n.state AS type, n.finished_at,
                           json_build_object('deliveryId', n.id, 'kind', n.kind, 'activityId', n.activity_id,
                                             'deviceId', n.device_id, 'channelId', n.channel_id, 'apnsId', n.apns_id,
                                             'apnsUniqueId', n.apns_unique_id, 'attempts', n.attempts,
                                             'lastStatus', n.last_status, 'lastReason', n.last_reason)::text AS data
                    FROM picked n WHERE n.state IN ('sent', 'dead', 'expired')
                    UNION ALL
                    SELECT n.finished_xid, n.id, 1, n.visit_id, 'liveActivity.starting', n.finished_at,
                           json_build_object('activityId', NULL, 'deviceId', n.device_id, 'state', 'starting',
                                             'previousState', NULL)::text
                    FROM picked n WHERE n.kind = 'start' AND n.state = 'sent' AND n.device_id IS NOT NULL
                ) f
                ORDER BY f.finished_xid, f.id, f.part
                RETURNING id
            ), moved AS (
                UPDATE webhook_settings s SET deliveries_xid = last.finished_xid, deliveries_id = last.id
                FROM (SELECT finished_xid, id FROM picked ORDER BY finished_xid DESC, id DESC LIMIT 1) last
                WHERE s.only_row
            )
            SELECT count(*) AS n FROM picked
            """)
        return try rows.first?.int("n") ?? 0
    }

    // MARK: the worker

    /// Claims up to `limit` due webhooks, each the first open one of its visit with nothing of its visit on
    /// the wire, under a lease until `now + leaseSeconds` (when another worker may take them over).
    ///
    /// One pass over the open webhooks (few: they are sent within milliseconds) finds, per visit, the first
    /// open one and whether a later one is on the wire; the statement is planned once, whatever the table's
    /// statistics say. (Two `NOT EXISTS` probes per candidate were planned from statistics taken while nothing
    /// was open: each candidate read every open entry of an index, dead ones included, and re-planning walked
    /// the due index's dead entries: 14.5 ms a claim, PostgreSQL's largest share in a fleet's busy hour.) It is
    /// planned without bitmap scans (`plannedOnceAlongIndexes`): the open webhooks' index holds an entry for
    /// every webhook sent since the last VACUUM, and a bitmap scan visited the table for each of them at every
    /// claim, where an index scan marks them dead once. The
    /// row's own state and due time are checked again where it is locked: one another worker claimed meanwhile
    /// is skipped, never claimed twice.
    func claim(limit: Int, leaseSeconds: Double) async throws -> [ClaimedWebhook] {
        let now = clock.now()
        return try await pool.withConnection { connection in
            try connection.query(
                PostgresQuery(
                    """
                    WITH open AS (
                        SELECT o.id, o.next_attempt_at, row_number() OVER later AS n,
                               bool_or(o.state = 'sending' AND o.next_attempt_at > \(now)::float8)
                                   OVER (later ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS held
                        FROM webhooks o WHERE o.state IN ('pending', 'sending')
                        WINDOW later AS (PARTITION BY o.visit_id ORDER BY o.id)
                    ), picked AS (
                        -- The chosen ids as an array, each row then found by primary key: as a semi-join with
                        -- the chosen rows, the plan read every due row and compared it with each chosen one.
                        SELECT x.id FROM webhooks x
                        WHERE x.id = ANY (ARRAY(SELECT id FROM open WHERE n = 1 AND next_attempt_at <= \(now)::float8
                                                  AND held IS NOT TRUE
                                                ORDER BY next_attempt_at, id LIMIT \(limit)))
                          AND x.state IN ('pending', 'sending') AND x.next_attempt_at <= \(now)::float8
                        FOR UPDATE SKIP LOCKED
                    )
                    UPDATE webhooks w SET state = 'sending', next_attempt_at = \(now + leaseSeconds)::float8
                    FROM picked WHERE w.id = picked.id
                    RETURNING w.id, w.webhook_id::text AS webhook_id, w.visit_id, w.type, w.occurred_at, w.event_position,
                              w.data, COALESCE(w.requeued_at, w.created_at) AS created_at, w.attempts
                    """
                ).plannedOnceAlongIndexes()
            ).rows.map { row in
                ClaimedWebhook(
                    id: try row.int64("id"), webhookId: try row.string("webhook_id"), visitId: try row.string("visit_id"),
                    type: try row.string("type"), occurredAt: try row.int64("occurred_at"),
                    eventPosition: row.optionalInt64("event_position"), data: row["data"],
                    createdAt: try row.double("created_at"), attempts: try row.int("attempts"))
            }.sorted { $0.id < $1.id }
        }
    }

    /// Records a batch's outcomes in one statement, only for rows still on the wire. A webhook put back into
    /// backoff holds the later ones of its visit until then too, so a claim does not walk past them.
    func complete(_ completions: [WebhookCompletion]) async throws {
        guard !completions.isEmpty else { return }
        let now = clock.now()
        let ids = PostgresBinaryArray(completions.map(\.id))
        let states = PostgresBinaryArray(completions.map(\.state.rawValue))
        let next = PostgresBinaryArray(completions.map(\.nextAttemptAt))
        let statuses = PostgresBinaryArray(completions.map { $0.status.map(Int64.init) })
        let reasons = PostgresBinaryArray(completions.map(\.reason))
        let latencies = PostgresBinaryArray(completions.map(\.latencySeconds))
        // Each row finds its outcome by its position in the arrays, and the rows are found by primary key: no join
        // for the planner to order. (Joined with the arrays' unnest, a table whose statistics said "nothing on the
        // wire" was planned as a loop over every row sending times a scan of the batch: 250-360 ms a batch.) The
        // state is compared with a value not folded while planning, so that no index of open rows is implied.
        _ = try await pool.query(
            """
            WITH done AS (
                UPDATE webhooks w
                SET (state, next_attempt_at, attempts, finished_at, last_status, last_reason, last_latency_seconds) = (
                    SELECT s.state, COALESCE(s.next_attempt_at, w.next_attempt_at), w.attempts + 1,
                           CASE WHEN s.state IN ('sent', 'dead') THEN \(now)::float8 END, s.status, s.reason, s.latency
                    FROM (SELECT array_position(\(ids)::bigint[], w.id) AS p) x
                    CROSS JOIN LATERAL (
                        SELECT (\(states)::text[])[x.p] AS state, (\(next)::float8[])[x.p] AS next_attempt_at,
                               (\(statuses)::bigint[])[x.p] AS status, (\(reasons)::text[])[x.p] AS reason,
                               (\(latencies)::float8[])[x.p] AS latency
                    ) s)
                WHERE w.id = ANY (\(ids)::bigint[]) AND w.state = (SELECT 'sending'::text)
                RETURNING w.id, w.visit_id, w.state, w.next_attempt_at
            )
            UPDATE webhooks l SET next_attempt_at = d.next_attempt_at
            FROM done d
            WHERE d.state = 'pending' AND l.visit_id = d.visit_id AND l.state = 'pending' AND l.id > d.id
              AND l.next_attempt_at < d.next_attempt_at
            """)
    }

    // MARK: operations

    private static let columns: PostgresQuery = """
        id, webhook_id::text AS webhook_id, visit_id, type, state, attempts, occurred_at, created_at, next_attempt_at,
        finished_at, last_status, last_reason
        """

    /// The newest webhooks (by id, descending), optionally in one state.
    public func list(state: DeliveryState? = nil, limit: Int = 100) async throws -> [Webhook] {
        let limit = min(max(limit, 1), 1000)
        return try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT \(WebhookStore.columns) FROM webhooks \(OutboxStore.stateFilter(state))
                ORDER BY id DESC LIMIT \(limit)
                """
            ).rows.map(WebhookStore.webhook)
        }
    }

    /// One webhook by its outbox id.
    public func webhook(id: Int64) async throws -> Webhook? {
        try await pool.withConnection { connection in
            try connection.query("SELECT \(WebhookStore.columns) FROM webhooks WHERE id = \(id)").rows.first.map(
                WebhookStore.webhook)
        }
    }

    /// Requeues a dead webhook as a new attempt now, with a fresh 24 hours; its `id` and body stay the same.
    /// `OutboxError.notFound` for an unknown id, `.notRetryable` for one that is not dead.
    @discardableResult
    public func retry(id: Int64) async throws -> Webhook {
        let now = clock.now()
        // The answer is the row as this update left it: the worker may claim it the moment it commits.
        let updated = try await pool.query(
            """
            UPDATE webhooks SET state = 'pending', next_attempt_at = \(now)::float8, requeued_at = \(now)::float8,
                                finished_at = NULL
            WHERE id = \(id) AND state = 'dead'
            RETURNING \(WebhookStore.columns)
            """)
        if let requeued = updated.rows.first { return try WebhookStore.webhook(requeued) }
        guard let webhook = try await webhook(id: id) else {
            throw OutboxError(code: .notFound, message: "no delivery \(id)")
        }
        throw OutboxError(
            code: .notRetryable, message: "webhook \(id) is \(webhook.state.rawValue); only dead webhooks can be retried")
    }

    /// How many webhooks are in each state.
    public func depth() async throws -> [DeliveryState: Int] {
        try await pool.withConnection { connection in
            var out: [DeliveryState: Int] = [.pending: 0, .sending: 0, .sent: 0, .dead: 0]
            for row in try connection.query("SELECT state, count(*) AS n FROM webhooks GROUP BY state") {
                if let state = DeliveryState(rawValue: try row.string("state")) { out[state] = try row.int("n") }
            }
            return out
        }
    }

    /// Adds `livevisits_webhooks{state}` to `metrics`, read from the database at scrape time.
    public func registerDepthCollector(metrics: Metrics = .shared) {
        let store = self
        metrics.addCollector {
            guard let depth = try? await store.depth() else { return "" }
            var text = "# HELP livevisits_webhooks Webhooks by state.\n# TYPE livevisits_webhooks gauge\n"
            for state in [DeliveryState.pending, .sending, .sent, .dead] {
                text += "livevisits_webhooks{state=\"\(state.rawValue)\"} \(depth[state] ?? 0)\n"
            }
            return text
        }
    }

    static func webhook(_ row: PostgresRow) throws -> Webhook {
        Webhook(
            id: try row.int64("id"), webhookId: try row.string("webhook_id"), visitId: try row.string("visit_id"),
            type: try row.string("type"), state: DeliveryState(rawValue: try row.string("state")) ?? .pending,
            attempts: try row.int("attempts"), occurredAt: try row.int64("occurred_at"),
            createdAt: try row.double("created_at"), nextAttemptAt: try row.double("next_attempt_at"),
            finishedAt: row.optionalDouble("finished_at"), lastStatus: row.optionalInt64("last_status").map(Int.init),
            lastReason: row["last_reason"])
    }
}
