import Foundation
import Outbox
import Synchronization
import Testing

/// A push that arrives while the worker's first claim loop is stuck on a slow batch is claimed by another
/// loop at once, instead of waiting for the slow batch to finish (or for the poll).
@Suite(.serialized) struct BusyWorkerWakeTests {
    /// Holds pushes to one token for `holdSeconds`; answers the others at once; notes when each finished.
    final class SlowTokenSender: PushSender {
        let slowToken: String
        let holdSeconds: Double
        private let finished = Mutex<[String: Double]>([:])
        private let started = Mutex<Set<String>>([])

        init(slowToken: String, holdSeconds: Double) {
            self.slowToken = slowToken
            self.holdSeconds = holdSeconds
        }

        func send(_ request: OutgoingPush) async -> PushOutcome {
            _ = started.withLock { $0.insert(request.deviceToken) }
            if request.deviceToken == slowToken { try? await Task.sleep(nanoseconds: UInt64(holdSeconds * 1e9)) }
            finished.withLock { $0[request.deviceToken] = Date().timeIntervalSince1970 }
            return .accepted(latency: 0.001)
        }

        func hasStarted(_ token: String) -> Bool { started.withLock { $0.contains(token) } }
        func finishedAt(_ token: String) -> Double? { finished.withLock { $0[token] } }
    }

    @Test func aPushArrivingDuringASlowBatchIsNotHeldBehindIt() async throws {
        var configuration = OutboxFixture.fastConfiguration
        configuration.pollIntervalSeconds = 60  // only wake-ups move the worker in this test
        let f = try await OutboxFixture.make(configuration: configuration)
        defer { Task { await f.close() } }
        try await f.registerActivity(visit: "v-slow", activity: "a", token: token("slow"))
        try await f.registerActivity(visit: "v-fast", activity: "a", token: token("fast"))
        let sender = SlowTokenSender(slowToken: token("slow"), holdSeconds: 3)
        let worker = f.worker(sender)
        let running = Task { try await worker.run() }
        defer { running.cancel() }
        try await Task.sleep(nanoseconds: 300_000_000)  // let the first (empty) claim finish: the worker idles

        let now = Int64(Date().timeIntervalSince1970)
        _ = try await f.enqueue(update("v-slow", timestamp: now))
        worker.wake()
        for _ in 0..<500 where !sender.hasStarted(token("slow")) { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(sender.hasStarted(token("slow")))

        _ = try await f.enqueue(update("v-fast", timestamp: now))
        worker.wake()
        for _ in 0..<1000 where sender.finishedAt(token("slow")) == nil || sender.finishedAt(token("fast")) == nil {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let fast = try #require(sender.finishedAt(token("fast")))
        let slow = try #require(sender.finishedAt(token("slow")))
        #expect(fast < slow, "the second push waited for the slow batch")
        for _ in 0..<500 where try await f.count(.sent) < 2 { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(try await f.count(.sent) == 2)
    }
}
