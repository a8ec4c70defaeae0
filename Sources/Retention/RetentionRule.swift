import Postgres

/// How long what is kept is kept (contract §10).
public struct RetentionSettings: Sendable {
    /// `LIVEVISITS_RETENTION_DAYS`: finished deliveries, their attempts and retired tokens.
    public var retentionDays: Int = 30
    /// Idempotency records: 48 hours (a retry comes within minutes; the contract promises at least 24).
    public var idempotencyHours: Int = 48
    /// Tokens of a visit that ended: 12 hours after its end (no activity outlives 8 + 4 hours).
    public var endedVisitTokenHours: Int = 12
    /// The most rows one transaction deletes.
    public var batchSize: Int = 1_000

    public init(retentionDays: Int = 30) {
        self.retentionDays = retentionDays
    }
}

/// One retention rule: a statement that deletes at most `batchSize` rows in one transaction and answers one
/// row whose columns are the tables it deleted from and how many (`deliveries`, `delivery_attempts`, …).
/// `Prune` runs each rule until a batch deletes nothing. Another table is one more entry in `RetentionRule.all`.
public struct RetentionRule: Sendable {
    /// What the rule removes, for logs.
    public let name: String
    /// The batch statement for these settings at `now` (seconds since 1970, the application's clock).
    public let batch: @Sendable (_ settings: RetentionSettings, _ now: Double) -> PostgresQuery

    public init(name: String, batch: @escaping @Sendable (_ settings: RetentionSettings, _ now: Double) -> PostgresQuery) {
        self.name = name
        self.batch = batch
    }

    /// Every rule of contract §10, in the order they run. Events are never deleted; a delivery that is
    /// pending or sending never matches.
    public static let all: [RetentionRule] = [
        finishedDeliveries, finishedWebhooks, idempotencyRecords,
        retiredActivities, retiredTokens(table: "push_to_start_tokens"),
        retiredTokens(table: "notification_tokens"), endedVisitActivities, endedVisitChannels,
        endedVisitTrackingLinks,
    ]

    /// The final states of a delivery (`deliveries_finished_age` is partial on exactly these).
    static let finishedStates = "('sent', 'dead', 'expired', 'superseded', 'cancelled')"

    /// Finished deliveries older than the retention, oldest first, with their attempts: as many whole
    /// deliveries as keep the rows of the transaction (deliveries + attempts) within the batch size (at
    /// least one, so a delivery with more attempts than that still goes).
    public static let finishedDeliveries = RetentionRule(name: "finished deliveries") { settings, now in
        let cutoff = now - Double(settings.retentionDays) * 86_400
        return PostgresQuery(
            sql: """
                WITH picked AS (
                    SELECT id, finished_at FROM deliveries
                    WHERE state IN \(finishedStates) AND finished_at < $1::float8
                    ORDER BY finished_at LIMIT $2::int
                ), weighed AS (
                    SELECT p.id, row_number() OVER w AS n,
                           sum(1 + (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = p.id)) OVER w AS total
                    FROM picked p WINDOW w AS (ORDER BY p.finished_at, p.id)
                ), chosen AS (
                    SELECT id FROM weighed WHERE total <= $2::int OR n = 1
                ), gone_attempts AS (
                    -- Probes the key's index whatever the CTE's estimate: a hash join on it scans every attempt
                    -- kept, so a batch would cost more as the month's failures grow.
                    DELETE FROM delivery_attempts WHERE delivery_id = ANY(ARRAY(SELECT id FROM chosen)) RETURNING 1
                ), gone AS (
                    DELETE FROM deliveries d USING chosen c
                    WHERE d.id = c.id AND d.state IN \(finishedStates)
                    RETURNING 1
                )
                SELECT (SELECT count(*) FROM gone) AS deliveries, (SELECT count(*) FROM gone_attempts) AS delivery_attempts
                """, binds: [.text(String(cutoff)), .text(String(settings.batchSize))])
    }

    /// Finished webhooks (sent or dead) older than the retention, oldest first.
    public static let finishedWebhooks = RetentionRule(name: "finished webhooks") { settings, now in
        let cutoff = now - Double(settings.retentionDays) * 86_400
        return PostgresQuery(
            sql: """
                WITH gone AS (
                    DELETE FROM webhooks WHERE id = ANY(ARRAY(
                        SELECT id FROM webhooks WHERE state IN ('sent', 'dead') AND finished_at < $1::float8
                        ORDER BY finished_at LIMIT $2::int))
                    AND state IN ('sent', 'dead')
                    RETURNING 1
                )
                SELECT count(*) AS webhooks FROM gone
                """, binds: [.text(String(cutoff)), .text(String(settings.batchSize))])
    }

    /// Idempotency records older than 48 hours.
    public static let idempotencyRecords = RetentionRule(name: "idempotency records") { settings, now in
        let cutoff = now - Double(settings.idempotencyHours) * 3_600
        return """
            WITH gone AS (
                DELETE FROM http_idempotency h USING (
                    SELECT key_id, route, idempotency_key FROM http_idempotency
                    WHERE created_at < to_timestamp(\(String(cutoff))::float8)
                    ORDER BY created_at LIMIT \(settings.batchSize)
                ) old
                WHERE h.key_id = old.key_id AND h.route = old.route AND h.idempotency_key = old.idempotency_key
                RETURNING 1
            )
            SELECT count(*) AS http_idempotency FROM gone
            """
    }

    /// Tokens retired longer ago than the retention (`<table>_retired_age`). `keeping` (SQL on the table's
    /// row `t`) holds back rows that must stay whatever their age.
    public static func retiredTokens(table: String, keeping: String = "false") -> RetentionRule {
        RetentionRule(name: "retired \(table)") { settings, now in
            let cutoffMs = Int64((now - Double(settings.retentionDays) * 86_400) * 1_000)
            return PostgresQuery(
                sql: """
                    WITH gone AS (
                        DELETE FROM \(table) WHERE ctid = ANY(ARRAY(
                            SELECT ctid FROM \(table) t WHERE retired_at_ms IS NOT NULL AND retired_at_ms < $1::bigint
                              AND NOT (\(keeping))
                            ORDER BY retired_at_ms LIMIT $2::int))
                        AND retired_at_ms < $1::bigint
                        RETURNING 1
                    )
                    SELECT count(*) AS \(table) FROM gone
                    """, binds: [.text(String(cutoffMs)), .text(String(settings.batchSize))])
        }
    }

    /// Retired Live Activities older than the retention, but those of a visit still active: they are the
    /// ledger's memory of what each device had (a dismissal withholds the visit's starts and fallbacks from
    /// its device for as long as the visit runs). They go with the visit's other tokens 12 hours after it ends.
    public static let retiredActivities = retiredTokens(
        table: "live_activities",
        keeping: "EXISTS (SELECT 1 FROM visits v WHERE v.visit_id = t.visit_id AND NOT v.ended)")

    /// Every live-activity token, retired or not, of a visit that ended more than 12 hours ago (its last
    /// event, the end, is the stream's newest: one probe of the events' stream index per visit).
    public static let endedVisitActivities = RetentionRule(name: "tokens of ended visits") { settings, now in
        let cutoff = now - Double(settings.endedVisitTokenHours) * 3_600
        return PostgresQuery(
            sql: """
                WITH old AS (
                    SELECT la.visit_id, la.activity_id FROM live_activities la
                    JOIN visits v ON v.visit_id = la.visit_id AND v.ended
                    WHERE (SELECT extract(epoch FROM e.recorded_at) FROM events e
                           WHERE e.stream_name = 'visit-' || v.visit_id ORDER BY e.position DESC LIMIT 1) < $1::float8
                    LIMIT $2::int
                ), gone AS (
                    DELETE FROM live_activities la USING old
                    WHERE la.visit_id = old.visit_id AND la.activity_id = old.activity_id
                    RETURNING 1
                )
                SELECT count(*) AS live_activities FROM gone
                """, binds: [.text(String(cutoff)), .text(String(settings.batchSize))])
    }

    /// Every broadcast channel of a visit that ended more than 12 hours ago, but one whose creation is in
    /// flight. Normally the channel was deleted at APNs an hour after its end and its row went with it; a
    /// row still here (a deletion that kept failing, an end broadcast that was dead-lettered) goes, and the
    /// next reconciliation deletes the channel at APNs as an orphan.
    public static let endedVisitChannels = RetentionRule(name: "channels of ended visits") { settings, now in
        let cutoff = now - Double(settings.endedVisitTokenHours) * 3_600
        return PostgresQuery(
            sql: """
                WITH old AS (
                    SELECT c.visit_id, c.environment FROM channels c
                    JOIN visits v ON v.visit_id = c.visit_id AND v.ended
                    WHERE c.state <> 'creating'
                      AND (SELECT extract(epoch FROM e.recorded_at) FROM events e
                           WHERE e.stream_name = 'visit-' || v.visit_id ORDER BY e.position DESC LIMIT 1) < $1::float8
                    LIMIT $2::int
                ), gone AS (
                    DELETE FROM channels c USING old
                    WHERE c.visit_id = old.visit_id AND c.environment = old.environment AND c.state <> 'creating'
                    RETURNING 1
                )
                SELECT count(*) AS channels FROM gone
                """, binds: [.text(String(cutoff)), .text(String(settings.batchSize))])
    }

    /// The tracking link of a visit that ended more than 12 hours ago: it has answered nothing since an hour
    /// after the end, and its row (a token's hash) is no use to anyone.
    public static let endedVisitTrackingLinks = RetentionRule(name: "tracking links of ended visits") { settings, now in
        let cutoff = now - Double(settings.endedVisitTokenHours) * 3_600
        return PostgresQuery(
            sql: """
                WITH old AS (
                    SELECT t.visit_id FROM tracking_links t
                    JOIN visits v ON v.visit_id = t.visit_id AND v.ended
                    WHERE (SELECT extract(epoch FROM e.recorded_at) FROM events e
                           WHERE e.stream_name = 'visit-' || v.visit_id ORDER BY e.position DESC LIMIT 1) < $1::float8
                    LIMIT $2::int
                ), gone AS (
                    DELETE FROM tracking_links t USING old WHERE t.visit_id = old.visit_id
                    RETURNING 1
                )
                SELECT count(*) AS tracking_links FROM gone
                """, binds: [.text(String(cutoff)), .text(String(settings.batchSize))])
    }
}
