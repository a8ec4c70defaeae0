import Foundation
import TestSupport
import Testing

@testable import Postgres

/// The pool's work timeout: work on a lent connection that runs past it has its statement cancelled,
/// the caller gets `.unavailable` and the connection is replaced; work that finished in time is never
/// touched by its (stopped) watchdog. It is what bounds a commit waiting for a lost synchronous standby,
/// which `statement_timeout` does not (`SynchronousStandbyTests` in ScaleTests shows that case).
@Suite(.timeLimit(.minutes(1))) struct WorkTimeoutTests {
    @Test func workPastTheTimeoutIsCancelledAndItsConnectionReplaced() async throws {
        let url = try await TestDatabase.createMigrated()
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1, workTimeoutSeconds: 1)) { pool in
            let before = try await pool.query("SELECT pg_backend_pid() AS pid").first?.int("pid")
            do {
                try await pool.withConnection { try $0.execute(script: "SELECT pg_sleep(30)") }
                Issue.record("a 30 s statement finished under a 1 s work timeout")
            } catch let error as PostgresError {
                #expect(error.code == .unavailable)
                #expect(error.message.contains("did not finish within 1 s"), "\(error.message)")
            }
            let after = try await pool.query("SELECT pg_backend_pid() AS pid").first?.int("pid")
            #expect(after != nil && after != before, "the cancelled connection was replaced")
        }
    }

    @Test func workThatFinishedInTimeKeepsItsConnection() async throws {
        let url = try await TestDatabase.createMigrated()
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1, workTimeoutSeconds: 1)) { pool in
            let first = try await pool.query("SELECT pg_backend_pid() AS pid").first?.int("pid")
            // The first work's deadline was taken out as it finished: its watchdog can never cancel or drop
            // anything later, whenever the next work runs.
            #expect(pool.deadlinesSet == 0, "a finished work's deadline is still set")
            let second = try await pool.withConnection { c in
                try c.execute(script: "SELECT pg_sleep(0.1)")
                return try c.query("SELECT pg_backend_pid() AS pid").first?.int("pid")
            }
            #expect(first != nil && second == first)
        }
    }

    @Test func withoutATimeoutLongWorkRuns() async throws {
        let url = try await TestDatabase.createMigrated()
        let configuration = PostgresConfiguration(url: url, size: 1, workTimeoutSeconds: 1).withoutWorkTimeout
        #expect(configuration.workTimeoutSeconds == nil)
        try await PostgresPool.withPool(configuration) { pool in
            try await pool.withConnection { try $0.execute(script: "SELECT pg_sleep(1.5)") }
        }
    }
}
