import Foundation
import Outbox
import OutboxTestSupport
import Runtime
import Synchronization
import TestSupport
import Testing

/// A push that arrives while the worker's first claim loop is stuck on a slow batch is claimed by another
/// loop at once, instead of waiting for the slow batch to finish (or for the poll).
@Suite(.serialized, .timeLimit(.minutes(3))) struct BusyWorkerWakeTests {
    /// Holds pushes to some tokens, each at its own gate, until the test opens it; answers the others at once.
    final class SlowTokenSender: PushSender {
        let gates: [String: Gate]
        private let finished = Mutex<Set<String>>([])

        init(slowTokens: [String]) { gates = Dictionary(uniqueKeysWithValues: slowTokens.map { ($0, Gate()) }) }
        convenience init(slowToken: String) { self.init(slowTokens: [slowToken]) }

        /// The gate of the first slow token.
        var gate: Gate { gates.values.first! }

        func send(_ request: OutgoingPush) async -> PushOutcome {
            if let gate = gates[request.deviceToken] { await gate.wait() }
            _ = finished.withLock { $0.insert(request.deviceToken) }
            return .accepted(latency: 0.001)
        }

        func hasFinished(_ token: String) -> Bool { finished.withLock { $0.contains(token) } }
        func openAll() { for gate in gates.values { gate.open() } }
    }

    @Test func aPushArrivingDuringASlowBatchIsNotHeldBehindIt() async throws {
        var configuration = OutboxFixture.fastConfiguration
        configuration.pollIntervalSeconds = 3600  // only wake-ups move the worker in this test
        try await withOutboxFixture(configuration: configuration) { f in
            try await f.registerActivity(visit: "v-slow", activity: "a", token: token("slow"))
            try await f.registerActivity(visit: "v-fast", activity: "a", token: token("fast"))
            let sender = SlowTokenSender(slowToken: token("slow"))
            let worker = f.worker(sender)
            try await withRunning({ try await worker.run() }) { _ in
                defer { sender.gate.open() }

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
    }

    /// The first loop is stuck on a slow batch and an extra loop on another; a push arrives, and the extra loop
    /// woken for it is still watching whether the first loop's batch is slow when the other extra loop's batch
    /// ends. That loop claims again only when woken, so the woken one must not take that end for the first
    /// loop's and stand down: it claims the push once the slow batch has been on the wire `slowBatchSeconds`.
    /// The worker runs on a manual clock: the watch is the only sleeper due within `slowBatchSeconds` (the
    /// polls and the heartbeats are far longer), so the test sees it begin and ends it by advancing the clock.
    @Test func anotherExtraLoopsBatchEndingDoesNotHoldThePushBack() async throws {
        var configuration = OutboxFixture.fastConfiguration
        configuration.pollIntervalSeconds = 3600  // only wake-ups move the worker in this test
        configuration.leaseSeconds = 600  // heartbeats far beyond the watch
        configuration.reapIntervalSeconds = 3600
        configuration.slowBatchSeconds = 2
        let watch = configuration.slowBatchSeconds
        let clock = ManualClock(now: Date().timeIntervalSince1970)
        try await withOutboxFixture(clock: clock, configuration: configuration) { f in
            for visit in ["v-slow", "v-middle", "v-fast"] {
                try await f.registerActivity(visit: visit, activity: "a", token: token(visit))
            }
            let sender = SlowTokenSender(slowTokens: [token("v-slow"), token("v-middle")])
            let worker = f.worker(sender)
            try await withRunning({ try await worker.run() }) { _ in
                defer { sender.openAll() }
                // Every loop idle (the first after its first, empty, claim; the extra ones waiting for a backlog), so
                // that the first push finds the first loop idle and no extra loop is woken before the middle push.
                try await clock.waitForSleepers(configuration.concurrentBatches)

                let now = Int64(clock.now())
                _ = try await f.enqueue(update("v-slow", timestamp: now))
                worker.wake()
                try await eventually("the slow push held on the wire") { sender.gates[token("v-slow")]!.waiting == 1 }
                _ = try await f.enqueue(update("v-middle", timestamp: now))
                worker.wake()
                // An extra loop watches the slow batch; once it has been on the wire `slowBatchSeconds`, it claims.
                try await clock.waitForSleepers(1, dueWithin: watch)
                clock.advance(by: watch)
                try await eventually("an extra loop holds the middle push on the wire") {
                    sender.gates[token("v-middle")]!.waiting == 1
                }
                _ = try await f.enqueue(update("v-fast", timestamp: now))
                worker.wake()
                try await clock.waitForSleepers(1, dueWithin: watch)  // the woken loop is watching the slow batch now
                sender.gates[token("v-middle")]!.open()
                try await eventually("the middle push recorded as sent") { try await f.count(.sent) == 1 }
                // The middle batch's end must not have ended the watch: the slow batch is still on the wire.
                clock.advance(by: watch)
                try await eventually("the push claimed while the first loop's batch is still on the wire", within: 20) {
                    sender.hasFinished(token("v-fast"))
                }
                #expect(!sender.hasFinished(token("v-slow")))
                sender.openAll()
                try await eventually("all three recorded as sent") { try await f.count(.sent) == 3 }
            }
        }
    }
}
