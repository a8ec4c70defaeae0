import Postgres
import TestSupport

/// A migrated scratch database's pool, lent to `body` and closed after it, also when it throws.
func withTestPool(_ body: (PostgresPool) async throws -> Void) async throws {
    let (_, pool) = try await TestDatabase.create(poolSize: 1)
    do {
        try await body(pool)
    } catch {
        await pool.close()
        throw error
    }
    await pool.close()
}
