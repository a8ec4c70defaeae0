import Foundation
import Postgres
import TestSupport
import Testing

/// A write that a read-only server refuses (SQLSTATE 25006, as a standby or a demoted primary answers) is
/// `unavailable`, and the pool drops that connection: the next use connects afresh, which is how a
/// multi-host URL with `target_session_attrs=read-write` finds the new primary after a failover.
@Suite(.timeLimit(.minutes(1))) struct ReadOnlyServerTests {
    @Test func aReadOnlyRefusalIsUnavailableAndTheConnectionIsReplaced() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let before = try await pool.query("SELECT pg_backend_pid() AS pid").first?.int("pid")
            do {
                try await pool.withConnection { connection in
                    // This session now behaves like a standby's for writes.
                    try connection.execute(script: "SET default_transaction_read_only = on")
                    try connection.execute(script: "CREATE TABLE refused (x int)")
                }
                Issue.record("the write was not refused")
            } catch let error as PostgresError {
                #expect(error.code == .unavailable)
                #expect(error.sqlState == PostgresError.readOnlySQLState)
            }
            let after = try await pool.query(
                "SELECT pg_backend_pid() AS pid, current_setting('default_transaction_read_only') AS ro")
            #expect(try after.first?.int("pid") != before, "the read-only connection was replaced")
            #expect(try after.first?.string("ro") == "off")
        }
    }
}
