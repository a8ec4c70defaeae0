import Postgres
import TestSupportCore

/// Lends a fresh, migrated scratch database (its URL and a pool of `poolSize` connections on it) to `body`
/// and closes the pool once `body` has returned or thrown.
public func withTestDatabase<Result>(
    poolSize: Int = 8,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (_ url: String, _ pool: PostgresPool) async throws -> Result
) async throws -> Result {
    try await withResource({ try await TestDatabase.create(poolSize: poolSize) }, close: { await $0.pool.close() }) {
        try await body($0.url, $0.pool)
    }
}
