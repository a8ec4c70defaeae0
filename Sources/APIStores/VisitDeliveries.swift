import Postgres

/// A visit's deliveries as the console shows them (`GET /v1/visits/{id}/deliveries`, contract §11): the
/// outbox's `deliveries` rows of one visit, newest first, never a token (none is stored in them: a
/// delivery names its target, the token is looked up at send time).
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
    }

    /// The visit's newest `limit` deliveries, by id descending.
    public static func list(visitId: String, limit: Int = 100, on connection: PostgresConnection) throws -> [Row] {
        try connection.query(
            """
            SELECT id, kind, split_part(target, '[', 1) AS target_kind, COALESCE(sent_priority, priority) AS priority, state, attempts, last_status, last_reason,
                   created_at, CASE WHEN state = 'sent' THEN finished_at END AS sent_at
            FROM deliveries WHERE visit_id = \(visitId)
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map { row in
            Row(
                id: try row.int64("id"), kind: try row.string("kind"), target: targetName(try row.string("target_kind")),
                priority: try row.int("priority"), state: try row.string("state"), attempts: try row.int("attempts"),
                lastStatus: row.optionalInt64("last_status").map(Int.init), lastReason: row["last_reason"],
                createdAt: try row.double("created_at"), sentAt: row.optionalDouble("sent_at"))
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
