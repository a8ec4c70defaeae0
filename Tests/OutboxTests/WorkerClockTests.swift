import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Runtime
import Synchronization
import TestSupport
import Testing

/// The worker waits on its injected clock: the heartbeat that keeps a batch's lease and the idle wait
/// for the next due delivery pass only when a `ManualClock` is advanced. Nothing here sleeps; a worker
/// that waited on real time would never register a sleeper and the test would hit its time limit.
@Suite(.timeLimit(.minutes(1))) struct WorkerClockTests {
    static let t0: Double = 1_900_000_000

    /// Answers once `release()` is called; tells when a send started.
    final class GatedSender: PushSender {
        let started = WakeUp()
        private let gate = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
        private let calls = Mutex<[OutgoingPush]>([])

        func send(_ push: OutgoingPush) async -> PushOutcome {
            calls.withLock { $0.append(push) }
            started.signal()
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let open = gate.withLock { g -> Bool in
                    if !g.open { g.waiting.append(c) }
                    return g.open
                }
                if open { c.resume() }
            }
            return .accepted(latency: 0.001)
        }

        func release() {
            let waiting = gate.withLock { g -> [CheckedContinuation<Void, Never>] in
                g.open = true
                defer { g.waiting = [] }
                return g.waiting
            }
            for c in waiting { c.resume() }
        }

        var sent: [OutgoingPush] { calls.withLock { $0 } }
    }

    func leaseExpiry(_ f: OutboxFixture) async throws -> Double? {
        try await f.pool.withConnection {
            try $0.query("SELECT lease_expires_at FROM deliveries WHERE state = 'sending'").first?.optionalDouble(
                "lease_expires_at")
        }
    }

    @Test func theHeartbeatRenewsTheLeaseAsTheClockAdvances() async throws {
        let clock = ManualClock(now: Self.t0)
        var configuration = OutboxFixture.fastConfiguration
        configuration.leaseSeconds = 30  // a heartbeat every 10 s of the clock
        try await withOutboxFixture(clock: clock, configuration: configuration) { f in
            try await f.registerActivity(visit: "v-beat", activity: "a", token: token("beat"))
            try await f.enqueue(update("v-beat", timestamp: Int64(Self.t0)))

            let sender = GatedSender()
            let worker = f.worker(sender)
            let batch = Task { try await worker.runOnce() }
            #expect(await sender.started.wait(upTo: 30), "the push was not sent")
            #expect(try await leaseExpiry(f) == Self.t0 + 30)

            for beat in 1...3 {
                try await clock.waitForSleepers(1)  // the heartbeat sleeps on the clock
                clock.advance(by: 10)
                // Back asleep means this beat's renewal is done.
                try await clock.waitForSleepers(1)
                #expect(try await leaseExpiry(f) == Self.t0 + Double(beat) * 10 + 30, "beat \(beat)")
            }

            sender.release()
            #expect(try await batch.value == 1)
            #expect(try await f.count(.sent) == 1)
            #expect(clock.sleeperCount == 0, "the heartbeat outlived its batch")
        }
    }

    /// A fixture on a manual clock whose worker (one loop) wakes only for due times: no poll, no reaping.
    static func withFixtureWaitingForDueTimes(_ body: (ManualClock, OutboxFixture) async throws -> Void) async throws {
        let clock = ManualClock(now: Self.t0)
        var configuration = OutboxFixture.fastConfiguration
        configuration.pollIntervalSeconds = 3600  // only the due time ends the idle wait
        configuration.concurrentBatches = 1
        configuration.reapIntervalSeconds = 3600
        try await withOutboxFixture(clock: clock, configuration: configuration) { try await body(clock, $0) }
    }

    /// Lends the fixture's worker, running and sending through an open `GatedSender`, to `body`; cancels it
    /// and waits for it afterwards.
    static func withRunningWorker(
        _ f: OutboxFixture, _ body: (GatedSender, Task<Void, any Error>) async throws -> Void
    ) async throws {
        let sender = GatedSender()
        sender.release()
        let worker = f.worker(sender)
        try await withRunning({ try await worker.run() }) { try await body(sender, $0) }
    }

    @Test func anIdleWorkerWakesForTheNextDueDeliveryOnItsClock() async throws {
        try await Self.withFixtureWaitingForDueTimes { clock, f in
            try await f.registerActivity(visit: "v-later", activity: "a", token: token("later"))
            var later = update("v-later", timestamp: Int64(Self.t0))
            later.notBefore = Self.t0 + 30
            try await f.enqueue(later)

            try await Self.withRunningWorker(f) { sender, running in

                // Idle until the delivery's due time: one sleeper, nothing sent.
                try await clock.waitForSleepers(1)
                #expect(sender.sent.isEmpty)
                clock.advance(by: 29)
                #expect(clock.sleeperCount == 1, "woke before the due time")
                #expect(sender.sent.isEmpty)
                clock.advance(by: 1)
                #expect(await sender.started.wait(upTo: 30), "the due delivery was not sent")
                #expect(sender.sent.map(\.deviceToken) == [token("later")])

                running.cancel()
                try await running.value
                #expect(try await f.count(.sent) == 1)
            }
        }
    }

    /// A wake-up that arrives while the worker's batch is on the wire, for nothing new (the commit it signals was
    /// the one the claim took), does not start another claim after the batch: the completion's read of the next
    /// due time answered it. Counted by `livevisits_outbox_claims_total`.
    @Test func aWakeUpForWorkTheBatchTookStartsNoEmptyClaim() async throws {
        try await Self.withFixtureWaitingForDueTimes { clock, f in
            try await f.registerActivity(visit: "v-once", activity: "a", token: token("once"))
            try await f.enqueue(update("v-once", timestamp: Int64(Self.t0)))
            let sender = GatedSender()
            let metrics = Metrics()
            let worker = f.worker(sender, metrics: metrics)
            try await withRunning({ try await worker.run() }) { running in

                #expect(await sender.started.wait(upTo: 10), "the due delivery was not sent")
                worker.wake()  // late: its work is the batch on the wire
                sender.release()
                try await eventually("the batch recorded as sent") { try await f.count(.sent) == 1 }
                try await clock.waitForSleepers(1)
                #expect(metrics.value("livevisits_outbox_claims_total", labels: ["found": "some"]) == 1)
                #expect(
                    metrics.value("livevisits_outbox_claims_total", labels: ["found": "none"]) == nil,
                    "an empty claim followed the batch")

                // A wake-up for new work still claims it.
                try await f.registerActivity(visit: "v-new", activity: "a", token: token("new"))
                try await f.enqueue(update("v-new", timestamp: Int64(Self.t0)))
                worker.wake()
                #expect(await sender.started.wait(upTo: 10), "the new delivery was not sent")
                try await eventually("the new one recorded as sent") { try await f.count(.sent) == 2 }
                running.cancel()
                try await running.value
            }
        }
    }

    /// After a batch, the worker's wait for the next due delivery runs on the due time its completion read in
    /// the same round trip: a delivery due later than the batch is sent at that time, not at the next poll.
    @Test func afterABatchTheWorkerWaitsForTheDueTimeItsCompletionRead() async throws {
        try await Self.withFixtureWaitingForDueTimes { clock, f in
            try await f.registerActivity(visit: "v-now", activity: "a", token: token("now"))
            try await f.registerActivity(visit: "v-soon", activity: "a", token: token("soon"))
            try await f.enqueue(update("v-now", timestamp: Int64(Self.t0)))
            var soon = update("v-soon", timestamp: Int64(Self.t0))
            soon.notBefore = Self.t0 + 20
            try await f.enqueue(soon)

            try await Self.withRunningWorker(f) { sender, running in

                #expect(await sender.started.wait(upTo: 10), "the due delivery was not sent")
                #expect(sender.sent.map(\.deviceToken) == [token("now")])
                // Once the batch is recorded (its lease's heartbeat, a sleeper too, has ended with the send), the only
                // sleeper is the worker's wait for the later delivery's due time.
                try await eventually("the first batch recorded as sent") { try await f.count(.sent) == 1 }
                try await clock.waitForSleepers(1)
                clock.advance(by: 19)
                #expect(clock.sleeperCount == 1, "woke before the due time")
                #expect(sender.sent.count == 1)
                clock.advance(by: 1)
                #expect(await sender.started.wait(upTo: 10), "the later delivery was not sent at its due time")
                #expect(sender.sent.map(\.deviceToken) == [token("now"), token("soon")])

                running.cancel()
                try await running.value
                #expect(try await f.count(.sent) == 2)
            }
        }
    }

    /// Under a stream of pushes the first loop's next claim starts `claimGatherSeconds` after the last one
    /// started, on the worker's clock: the push that comes meanwhile waits until the clock has moved on.
    @Test func theNextClaimUnderAStreamGathersOnTheClock() async throws {
        let clock = ManualClock(now: Self.t0)
        var configuration = OutboxFixture.fastConfiguration
        configuration.concurrentBatches = 1
        configuration.pollIntervalSeconds = 3600
        configuration.leaseSeconds = 600
        configuration.reapIntervalSeconds = 3600
        configuration.claimGatherSeconds = 5  // the only sleeper due this soon
        try await withOutboxFixture(clock: clock, configuration: configuration) { f in
            for v in ["v-1", "v-2", "v-3"] { try await f.registerActivity(visit: v, activity: "a", token: token(v)) }
            let sender = RecordingSender()
            let worker = f.worker(sender)
            try await withRunning({ try await worker.run() }) { _ in
                try await clock.waitForSleepers(1)  // idle after its first, empty, claim

                for v in ["v-1", "v-2"] { try await f.enqueue(update(v, timestamp: Int64(Self.t0))) }
                worker.wake()
                try await eventually("the first two sent") { try await f.count(.sent) == 2 }
                try await f.enqueue(update("v-3", timestamp: Int64(Self.t0)))
                worker.wake()
                let gathering = await withDeadline(seconds: 30) { try? await clock.waitForSleepers(1, dueWithin: 5) }
                try #require(gathering != nil, "the worker did not wait claimGatherSeconds on its clock")
                #expect(sender.calls.count == 2, "the next claim did not wait for the gathering")
                clock.advance(by: 5)
                try await eventually("the third sent once the clock moved on") { try await f.count(.sent) == 3 }
            }
        }
    }
}
