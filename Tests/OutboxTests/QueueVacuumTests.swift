import OutboxTestSupport
import Postgres
import Testing

@Suite(.timeLimit(.minutes(2))) struct QueueVacuumTests {
    /// Migration 0020: every push leaves dead entries in the claim's index that only VACUUM removes, so
    /// autovacuum comes to `deliveries` after 1 % of it changed (inserts too), unthrottled.
    @Test func deliveriesAreVacuumedAfterOnePercentOfThemChanged() async throws {
        try await withOutboxFixture { f in
            let row = try await f.pool.query(
                "SELECT array_to_string(reloptions, ',') AS options FROM pg_class WHERE relname = 'deliveries'"
            ).first
            let options = Set((row?["options"] ?? "").split(separator: ",").map(String.init))
            for option in [
                "autovacuum_vacuum_scale_factor=0.01", "autovacuum_vacuum_insert_scale_factor=0.01",
                "autovacuum_vacuum_cost_delay=0",
            ] {
                #expect(options.contains(option), "deliveries has \(options.sorted()), not \(option)")
            }
        }
    }
}
