import Postgres

/// Who follows a visit, as its answers show it: the count of its live (not retired) Live Activities and its
/// broadcast channels that have an id, by environment. One statement, to run alone or in a command's or a
/// page's pipeline (a visit answer used to read the two with two statements).
public struct VisitFollowers: Sendable {
    public let liveActivities: Int
    public let channels: [(channelId: String, environment: String)]

    /// The statement: one row when the visit has no channel, else one per channel, each with the count.
    /// Planned once per connection: two probes by visit id whatever the value (left to PostgreSQL's choice,
    /// it was planned anew at up to 40 % of the calls, each plan costing more than the statement).
    public static func query(visitId: String) -> PostgresQuery {
        let query: PostgresQuery = """
            SELECT (SELECT count(*) FROM live_activities WHERE visit_id = \(visitId) AND retired_at_ms IS NULL) AS live,
                   ch.channel_id, ch.environment
            FROM (SELECT 1) AS visit
            LEFT JOIN LATERAL (SELECT channel_id, environment FROM channels
                               WHERE visit_id = \(visitId) AND channel_id IS NOT NULL) ch ON true
            ORDER BY ch.environment
            """
        return query.plannedOnce()
    }

    /// Reads the rows of `query`.
    public init(_ rows: PostgresRows) throws {
        liveActivities = try rows.first?.int("live") ?? 0
        channels = try rows.rows.compactMap { row in
            guard let id = row["channel_id"] else { return nil }
            return (id, try row.string("environment"))
        }
    }

    /// Reads a visit's followers on `connection`.
    public init(visitId: String, on connection: PostgresConnection) throws {
        try self.init(connection.query(VisitFollowers.query(visitId: visitId)))
    }
}
