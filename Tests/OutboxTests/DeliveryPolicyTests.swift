import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Runtime
import Testing

/// Contract §8: the priority-10 budget per target and the progress cadence, both kept in the database.
@Suite(.timeLimit(.minutes(3))) struct DeliveryPolicyTests {
    static let t0 = 1_790_000_000.0

    static var allowanceOne: OutboxConfiguration {
        var c = OutboxFixture.fastConfiguration
        c.priority10PerHour = 1
        c.priority10PerHourFrequent = 3
        return c
    }

    /// An update planned at priority 10 (one with an alert).
    func alerting(_ visit: String, timestamp: Int64, note: String) -> PushIntent {
        var intent = update(visit, timestamp: timestamp, note: note)
        intent.priority = 10
        return intent
    }

    /// Sends one intent and returns the priority it went with.
    func sendOne(_ intent: PushIntent, _ f: OutboxFixture, _ worker: OutboxWorker, _ sender: RecordingSender) async throws
        -> Int?
    {
        let before = sender.calls.count
        _ = try await f.enqueue(intent)
        try await f.drain(worker)
        #expect(sender.calls.count == before + 1)
        return sender.calls.last?.request.priority.rawValue
    }

    @Test func overTheAllowanceAnAlertGoesAtFiveAndTheEndStillAtTen() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock, configuration: Self.allowanceOne) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")
            try await f.setPreferences(customer: "c-1", device: "d-1", enabled: true, frequent: false)
            let metrics = Metrics()
            let sender = RecordingSender()
            let worker = f.worker(sender, metrics: metrics)
            let t0 = Int64(Self.t0)
            #expect(try await sendOne(alerting("v-1", timestamp: t0 + 1, note: "nearby"), f, worker, sender) == 10)
            #expect(try await sendOne(alerting("v-1", timestamp: t0 + 2, note: "onSite"), f, worker, sender) == 5)
            #expect(try await sendOne(end("v-1", timestamp: t0 + 3), f, worker, sender) == 10)
            // The body is unchanged: only the header goes down.
            #expect(sender.calls[1].request.body == alerting("v-1", timestamp: t0 + 2, note: "onSite").body)
            #expect(metrics.value("livevisits_apns_priority_downgrades_total") == 1)
            // The deliveries record what each went with.
            let sent = try await f.store.list(state: .sent).sorted { $0.id < $1.id }
            #expect(sent.map(\.priority) == [10, 10, 10])
            #expect(sent.map(\.sentPriority) == [10, 5, 10])
        }
    }

    @Test func frequentPushesKeepTheLargerAllowanceAndTheHourRunsOut() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock, configuration: Self.allowanceOne) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")
            try await f.setPreferences(customer: "c-1", device: "d-1", enabled: true, frequent: true)
            let sender = RecordingSender()
            let worker = f.worker(sender)
            let t0 = Int64(Self.t0)
            var priorities: [Int?] = []
            for i in 1...4 {
                priorities.append(try await sendOne(alerting("v-1", timestamp: t0 + Int64(i), note: "\(i)"), f, worker, sender))
            }
            #expect(priorities == [10, 10, 10, 5])
            // An hour after the first three, the allowance is back.
            clock.advance(by: 3601)
            #expect(try await sendOne(alerting("v-1", timestamp: t0 + 5, note: "5"), f, worker, sender) == 10)
        }
    }

    @Test func twoWorkersShareOneCount() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock, configuration: Self.allowanceOne) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")
            let sender = RecordingSender()
            let first = f.worker(sender)
            let second = f.worker(sender)
            let t0 = Int64(Self.t0)
            #expect(try await sendOne(alerting("v-1", timestamp: t0 + 1, note: "nearby"), f, first, sender) == 10)
            #expect(try await sendOne(alerting("v-1", timestamp: t0 + 2, note: "onSite"), f, second, sender) == 5)
            // Another target has an allowance of its own.
            try await f.registerActivity(visit: "v-2", activity: "a-2", token: token("a2"))
            #expect(try await sendOne(alerting("v-2", timestamp: t0 + 1, note: "nearby"), f, second, sender) == 10)
        }
    }

    /// Lends a fixture on a manual clock at `t0` with activity a-1 of visit v-1 registered, and a worker
    /// (counting into `metrics`) that sends to a `RecordingSender`.
    static func withActivity(
        metrics: Metrics = Metrics(),
        _ body: (ManualClock, OutboxFixture, OutboxWorker, RecordingSender) async throws -> Void
    ) async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            let sender = RecordingSender()
            try await body(clock, f, f.worker(sender, metrics: metrics), sender)
        }
    }

    // MARK: cadence

    func progress(_ visit: String, timestamp: Int64, note: String) -> PushIntent {
        var intent = update(visit, timestamp: timestamp, note: note)
        intent.pacingSeconds = 15
        return intent
    }

    @Test func progressUpdatesAreCoalescedToOnePerIntervalAndTheLatestArrives() async throws {
        try await Self.withActivity { clock, f, worker, sender in
            let t0 = Int64(Self.t0)
            // Six distance updates within one second.
            for i in 1...6 {
                _ = try await f.enqueue(progress("v-1", timestamp: t0 + Int64(i), note: "km \(7 - i)"))
                _ = try await worker.runOnce()
                clock.advance(by: 0.15)
            }
            #expect(sender.calls.count == 1)
            clock.advance(by: 5)
            #expect(try await worker.runOnce() == 0)
            // The interval's end: the latest state, once.
            clock.advance(by: 10)
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.count == 2)
            #expect(sender.calls.last?.request.body == progress("v-1", timestamp: t0 + 6, note: "km 1").body)
            #expect(try await f.count(.superseded) == 4)
            #expect(try await f.count(.pending) == 0)
        }
    }

    @Test func aStatusChangeIsNotDelayedAndReplacesAWaitingProgressUpdate() async throws {
        try await Self.withActivity { clock, f, worker, sender in
            let t0 = Int64(Self.t0)
            _ = try await f.enqueue(progress("v-1", timestamp: t0 + 1, note: "km 3"))
            _ = try await worker.runOnce()
            clock.advance(by: 1)
            _ = try await f.enqueue(progress("v-1", timestamp: t0 + 2, note: "km 2"))
            #expect(try await worker.runOnce() == 0)
            // nearby right after: at once, and the waiting progress update is superseded by it.
            _ = try await f.enqueue(alerting("v-1", timestamp: t0 + 3, note: "nearby"))
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.map { apsTimestamp(of: $0.request.body) } == [t0 + 1, t0 + 3])
            clock.advance(by: 20)
            #expect(try await worker.runOnce() == 0)
            #expect(try await f.count(.superseded) == 1)
        }
    }

    // MARK: eight hours

    @Test func nothingIsSentToAnActivityEightHoursAfterItBegan() async throws {
        let metrics = Metrics()
        try await Self.withActivity(metrics: metrics) { clock, f, worker, sender in
            let t0 = Int64(Self.t0)
            clock.advance(by: 8 * 3600 - 10)
            // A rotation does not restart the clock: the activity is the same one.
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1-rotated"))
            _ = try await f.enqueue(update("v-1", timestamp: t0 + 8 * 3600 - 10, stale: t0 + 9 * 3600, note: "late"))
            try await f.drain(worker)
            #expect(sender.calls.count == 1)
            clock.advance(by: 20)
            _ = try await f.enqueue(update("v-1", timestamp: t0 + 8 * 3600 + 10, stale: t0 + 9 * 3600, note: "lapsed"))
            _ = try await f.enqueue(end("v-1", timestamp: t0 + 8 * 3600 + 11))
            try await f.drain(worker)
            #expect(sender.calls.count == 1)
            #expect(metrics.value("livevisits_activities_lapsed_total") ?? 0 >= 1)
            let cancelled = try await f.store.list(state: .cancelled)
            #expect(cancelled.contains { $0.kind == .end && $0.lastReason?.contains("8 hours") == true })
        }
    }
}
