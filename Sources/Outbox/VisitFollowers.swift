import Postgres

/// Who follows a visit, as its answers show it: the count of its live (not retired) Live Activities and its
/// broadcast channels that have an id, by environment. One statement for any number of visits: a command
/// batch's (in its pipeline, after the writes), a page's, one visit's.
public struct VisitFollowers: Sendable {
    public let liveActivities: Int
    public let channels: [(channelId: String, environment: String)]

    /// The statement: per visit (in order, `idx` from 1) one row when it has no channel, else one per channel,
    /// each with the count. Planned once per connection: the plan is two probes by visit id per visit,
    /// whatever the values, so planning it again for each call's values would gain nothing.
    public static func query(visitIds: [String]) -> PostgresQuery {
        let query: PostgresQuery = """
            SELECT v.idx,
                   (SELECT count(*) FROM live_activities WHERE visit_id = v.visit_id AND retired_at_ms IS NULL) AS live,
                   ch.channel_id, ch.environment
            FROM unnest(\(visitIds)::text[]) WITH ORDINALITY AS v(visit_id, idx)
            LEFT JOIN LATERAL (SELECT channel_id, environment FROM channels
                               WHERE visit_id = v.visit_id AND channel_id IS NOT NULL) ch ON true
            ORDER BY v.idx, ch.environment
            """
        return query.plannedOnce()
    }

    /// The followers of each of `count` visits from the rows of `query(visitIds:)`, in its order.
    public static func each(_ rows: PostgresRows, count: Int) throws -> [VisitFollowers] {
        var live = [Int](repeating: 0, count: count)
        var channels = [[(channelId: String, environment: String)]](repeating: [], count: count)
        for row in rows.rows {
            let n = try row.int("idx") - 1
            guard live.indices.contains(n) else {
                throw PostgresError(code: .protocolViolation, message: "followers of a visit not asked for (\(n + 1))")
            }
            live[n] = try row.int("live")
            if let id = row["channel_id"] { channels[n].append((id, try row.string("environment"))) }
        }
        return (0..<count).map { VisitFollowers(liveActivities: live[$0], channels: channels[$0]) }
    }

    /// Reads the followers of `visitIds` on `connection`, in their order.
    public static func of(_ visitIds: [String], on connection: PostgresConnection) throws -> [VisitFollowers] {
        guard !visitIds.isEmpty else { return [] }
        return try each(connection.query(query(visitIds: visitIds)), count: visitIds.count)
    }
}
