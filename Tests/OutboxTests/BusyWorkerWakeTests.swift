import Foundation
import Outbox
import Synchronization
import TestSupport
import Testing

/// A push that arrives while the worker's first claim loop is stuck on a slow batch is claimed by another
/// loop at once, instead of waiting for the slow batch to finish (or for the poll).
@Suite(.serialized, .timeLimit(.minutes(3))) struct BusyWorkerWakeTests {
    /// Holds pushes to one token at a gate until the test opens it; answers the others at once.
    final class SlowTokenSender: PushSender {
        let slowToken: String
        let gate = Gate()
        private let finished = Mutex<Set<String>>([])

        init(slowToken: String) { self.slowToken = slowToken }

        func send(_ request: OutgoingPush) async -> PushOutcome {
            if request.deviceToken == slowToken { await gate.wait() }
            _ = finished.withLock { $0.insert(request.deviceToken) }
            return .accepted(latency: 0.001)
        }

        func hasFinished(_ token: String) -> Bool { finished.withLock { $0.contains(token) } }
    }

    @Test func aPushArrivingDuringASlowBatchIsNotHeldBehindIt() async throws {
        var configuration = OutboxFixture.fastConfiguration
        configuration.pollIntervalSeconds = 3600  // only wake-ups move the worker in this test
        let f = try await OutboxFixture.make(configuration: configuration)
        defer { Task { await f.close() } }
        try await f.registerActivity(visit: "v-slow", activity: "a", token: token("slow"))
        try await f.registerActivity(visit: "v-fast", activity: "a", token: token("fast"))
        let sender = SlowTokenSender(slowToken: token("slow"))
        defer { sender.gate.open() }
        let worker = f.worker(sender)
        let running = Task { try await worker.run() }
        defer { running.cancel() }

        let now = Int64(Date().timeIntervalSince1970)
        _ = try await f.enqueue(update("v-slow", timestamp: now))
        worker.wake()
        try await eventually("the slow push held on the wire") { sender.gate.waiting == 1 }

        _ = try await f.enqueue(update("v-fast", timestamp: now))
        worker.wake()
        // The slow push cannot finish before the gate opens, so the fast one finishing first is the proof.
        try await eventually("the second push sent while the slow batch is still on the wire") {
            sender.hasFinished(token("fast"))
        }
        #expect(!sender.hasFinished(token("slow")))
        sender.gate.open()
        try await eventually("both pushes recorded as sent") { try await f.count(.sent) == 2 }
    }
}
