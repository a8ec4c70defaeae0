import Postgres

/// The fleet's sending pause as operators see it (`GET /v1/ops/outbox/pause`): the outbox's `outbox_pause`
/// row, read only. The outbox writes it when APNs answers with a configuration error.
public struct SendingPauseView: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The pause in force at `now`, or nil when sending may go on.
    public func current(now: Double) async throws -> Pause? {
        try await pool.withConnection { try SendingPauseView.current(now: now, on: $0) }
    }

    public struct Pause: Sendable, Equatable {
        /// Epoch seconds (the workers' clock).
        public let since: Double
        public let until: Double
        public let reason: String
    }

    /// The pause in force at `now`, or nil when sending may go on.
    public static func current(now: Double, on connection: PostgresConnection) throws -> Pause? {
        guard
            let row = try connection.query(
                "SELECT paused_at, paused_until, reason FROM outbox_pause WHERE paused_until > \(now)"
            ).first
        else { return nil }
        return Pause(since: try row.double("paused_at"), until: try row.double("paused_until"), reason: try row.string("reason"))
    }
}
