import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Runtime
import TestSupport
import Testing

/// Contract §12: a worker whose database connection died while its batch was on the wire records that
/// batch itself once it reconnects, under its own lease: the pushes count as sent at once, not after the
/// lease runs out, and none is sent a second time.
@Suite(.timeLimit(.minutes(2))) struct ReconnectingWorkerTests {
    @Test func aBatchSentWhileTheConnectionDiedIsRecordedOnReconnectNotResent() async throws {
        // A lease far longer than the test: only the worker's own settling can finish these rows in time.
        var configuration = OutboxFixture.fastConfiguration
        configuration.leaseSeconds = 600
        try await withOutboxFixture(configuration: configuration) { f in
            let applicationName = "lv-reconnecting-worker"
            try await PostgresPool.withPool(
                PostgresConfiguration(url: TestDatabase.url(f.url, adding: "application_name=\(applicationName)"), size: 1)
            ) { workerPool in
                let now = Int64(Date().timeIntervalSince1970)
                for a in 0..<3 {
                    try await f.registerActivity(visit: "v-1", activity: "a-\(a)", token: token("rc\(a)"))
                }
                _ = try await f.enqueue(update("v-1", timestamp: now))

                let gate = Gate()
                let sender = RecordingSender(gate: gate)
                let worker = OutboxWorker(pool: workerPool, sender: sender, configuration: configuration, clock: f.clock)
                let cycle = Task { try await worker.runOnce() }
                try await eventually("the batch's three sends held at the gate") { gate.waiting == 3 }

                // The server ends the worker's connection while the pushes are on the wire.
                let terminated = try await f.pool.query(
                    """
                    SELECT count(*) AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE application_name = \(applicationName)) t
                    """)
                #expect(try terminated.first?.int("n") == 1)
                gate.open()
                await #expect(throws: (any Error).self, "recording the batch needs the connection that died") {
                    try await cycle.value
                }
                #expect(try await f.count(.sending) == 3)

                // The next cycle connects afresh and settles the batch before claiming anything.
                _ = try await worker.runOnce()
                #expect(try await f.count(.sent) == 3)
                #expect(try await f.count(.sending) == 0)
                #expect(sender.started == 3, "no push went out a second time")
            }
        }
    }
}
