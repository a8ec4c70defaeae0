import Postgres
import Runtime

/// `livevisits_projection_lag_events{projection}` at scrape time: how many committed events each
/// asynchronous follower (a row of `projection_checkpoints`) has not handled yet. Projections written in the
/// appending transaction (the visit read model) are never behind and are listed with 0.
public struct ProjectionLagMetric: Sendable {
    public static let name = "livevisits_projection_lag_events"
    private let pool: PostgresPool
    private let synchronous: [String]

    public init(pool: PostgresPool, synchronousProjections: [String]) {
        self.pool = pool
        self.synchronous = synchronousProjections
    }

    public func install(in metrics: Metrics = .shared) {
        let metric = self
        metrics.addCollector { await metric.render() }
    }

    public func render() async -> String {
        var text = "# HELP \(Self.name) Committed events a projection has not applied yet.\n# TYPE \(Self.name) gauge\n"
        for name in synchronous.sorted() {
            text += "\(Self.name)\(Metrics.render(["projection": name])) 0\n"
        }
        let rows = try? await pool.query(
            """
            SELECT c.name, (SELECT count(*) FROM events e
                            WHERE (e.transaction_id, e.global_position) > (c.transaction_id, c.global_position)) AS lag
            FROM projection_checkpoints c ORDER BY c.name
            """)
        for row in rows?.rows ?? [] {
            guard let name = row["name"], let lag = row.optionalInt64("lag") else { continue }
            text += "\(Self.name)\(Metrics.render(["projection": name])) \(lag)\n"
        }
        return text
    }
}
