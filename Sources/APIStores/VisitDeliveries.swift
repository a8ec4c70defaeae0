import Postgres

/// A visit's deliveries as the console shows them (`GET /v1/visits/{id}/deliveries`, contract §11 and §13):
/// the outbox's `deliveries` rows of one visit, newest first, never a token (none is stored in them: a
/// delivery names its target, the token is looked up at send time). Each names what it went to (activity,
/// device or channel) and the ids Apple's Push Notifications Console looks a push up by.
public struct VisitDeliveries: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The visit's newest `limit` deliveries, by id descending; nil when there is no such visit.
    public func list(visitId: String, limit: Int = 100) async throws -> [Row]? {
        try await pool.withConnection { c in
            guard try !c.query("SELECT 1 FROM visits WHERE visit_id = \(visitId)").isEmpty else { return nil }
            return try VisitDeliveries.list(visitId: visitId, limit: limit, on: c)
        }
    }

    /// One delivery of the visit.
    public struct Row: Sendable, Equatable {
        public let id: Int64
        /// `start`, `update`, `end` (and whatever kinds the outbox adds, as stored).
        public let kind: String
        /// `activity`, `pushToStart`, `channel` or `device`, from the stored target's prefix.
        public let target: String
        /// The priority it went with (after the budget), or the planned one before its first attempt.
        public let priority: Int
        public let state: String
        public let attempts: Int
        public let lastStatus: Int?
        public let lastReason: String?
        /// Epoch seconds.
        public let createdAt: Double
        /// When APNs accepted it (a sent delivery's finish time), else nil.
        public let sentAt: Double?
        /// The Live Activity it goes to, for an `activity` target; else nil.
        public let activityId: String?
        /// The device it goes to, for a `pushToStart` or `device` target; else nil.
        public let deviceId: String?
        /// The broadcast channel it goes to, for a `channel` target: the one it was last sent to, or before a
        /// send the visit's channel in its environment (nil when there is none).
        public let channelId: String?
        /// Its `apns-id` (lower-case), the same on every attempt.
        public let apnsId: String
        /// The `apns-unique-id` APNs acknowledged it with (sandbox pushes only), else nil.
        public let apnsUniqueId: String?
        /// Its `aps.timestamp` (epoch seconds): a device shows the acknowledged push with the greatest one.
        public let timestamp: Int64
        /// The `aps.content-state` it carries, as stored (JSON text, personal fields still sealed); nil for an
        /// `alert`.
        public let contentState: String?
        /// Its `aps.stale-date` (epoch seconds), else nil.
        public let staleDate: Int64?
        /// Its `aps.dismissal-date` (epoch seconds; an `end`'s), else nil.
        public let dismissalDate: Int64?
    }

    /// The visit's newest `limit` deliveries, by id descending.
    public static func list(visitId: String, limit: Int = 100, on connection: PostgresConnection) throws -> [Row] {
        try connection.query(
            """
            SELECT d.id, d.kind, split_part(d.target, '[', 1) AS target_kind, COALESCE(d.sent_priority, d.priority) AS priority,
                   d.state, d.attempts, d.last_status, d.last_reason, d.created_at,
                   CASE WHEN d.state = 'sent' THEN d.finished_at END AS sent_at,
                   d.activity_id, d.device_id, d.apns_id::text AS apns_id, d.apns_unique_id::text AS apns_unique_id,
                   -- A broadcast not sent yet goes to the channel the visit has now (its target names the channel).
                   COALESCE(d.channel_id, (SELECT ch.channel_id FROM channels ch WHERE ch.target = d.target)) AS channel_id,
                   d.aps_timestamp, (b.aps -> 'content-state')::text AS content_state,
                   (b.aps ->> 'stale-date')::numeric::bigint AS aps_stale_date,
                   (b.aps ->> 'dismissal-date')::numeric::bigint AS aps_dismissal_date
            FROM deliveries d
            -- What the push carries, read from its body: what a device shows once it is acknowledged.
            CROSS JOIN LATERAL (SELECT d.body::json -> 'aps' AS aps) b
            WHERE d.visit_id = \(visitId)
            ORDER BY d.id DESC LIMIT \(limit)
            """
        ).map { row in
            let target = targetName(try row.string("target_kind"))
            return Row(
                id: try row.int64("id"), kind: try row.string("kind"), target: target,
                priority: try row.int("priority"), state: try row.string("state"), attempts: try row.int("attempts"),
                lastStatus: row.optionalInt64("last_status").map(Int.init), lastReason: row["last_reason"],
                createdAt: try row.double("created_at"), sentAt: row.optionalDouble("sent_at"),
                activityId: target == "activity" ? row["activity_id"] : nil,
                deviceId: target == "pushToStart" || target == "device" ? row["device_id"] : nil,
                channelId: target == "channel" ? row["channel_id"] : nil,
                apnsId: try row.string("apns_id"), apnsUniqueId: row["apns_unique_id"],
                timestamp: try row.int64("aps_timestamp"), contentState: row["content_state"],
                staleDate: row.optionalInt64("aps_stale_date"), dismissalDate: row.optionalInt64("aps_dismissal_date"))
        }
    }

    /// The contract's name for the kind of a stored target, the word before its JSON array
    /// (`activity["v-1","a-1"]`, `start["v-1","<md5>"]`, `alert["v-1","c-7","d-1"]`; see `Outbox.enqueue`).
    static func targetName(_ prefix: String) -> String {
        switch prefix {
        case "start": "pushToStart"
        case "channel": "channel"
        case "alert": "device"
        default: "activity"
        }
    }
}
