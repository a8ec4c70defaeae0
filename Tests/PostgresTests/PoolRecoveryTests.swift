import Foundation
import Postgres
import TestSupport
import Testing

/// Runs its own cluster (so restarting it cannot disturb the other suites).
@Suite(.serialized, .timeLimit(.minutes(5))) struct PoolRecoveryTests {
    func pg(_ data: URL, _ args: String...) throws -> String {
        var env = ProcessInfo.processInfo.environment
        env["LIVEVISITS_PGDATA"] = data.path
        env["LIVEVISITS_PGPORT"] = "26432"
        let outcome = try Subprocess.runBlocking(
            TestDatabase.repositoryRoot.appendingPathComponent("scripts/pg").path, args, environment: env)
        guard outcome.status == 0 else {
            throw PostgresError(code: .query, message: "scripts/pg \(args) failed: \(outcome.stderr)")
        }
        return outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func thePoolSurvivesARestartAndFailsFastWhileDown() async throws {
        let data = TestDatabase.repositoryRoot.appendingPathComponent(".build/pg-recovery-\(getpid())")
        _ = try pg(data, "start")
        defer {
            _ = try? pg(data, "stop")
            try? FileManager.default.removeItem(at: data)
        }
        let url = try pg(data, "url")
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 2, acquireTimeoutSeconds: 2)) { pool in
            #expect(try await pool.query("SELECT 1 AS one").first!.int("one") == 1)

            _ = try pg(data, "stop")
            let started = Date()
            do {
                try await pool.query("SELECT 1 AS one")
                Issue.record("a query succeeded while the database was down")
            } catch let error as PostgresError {
                #expect(error.isUnavailable)
            }
            // "quickly": far below any request timeout (not a benchmark; a generous bound against hangs).
            #expect(Date().timeIntervalSince(started) < 10)

            _ = try pg(data, "start")
            #expect(try await pool.query("SELECT 2 AS two").first!.int("two") == 2)
            #expect(try await pool.query("SELECT 3 AS three").first!.int("three") == 3)
        }
    }
}
