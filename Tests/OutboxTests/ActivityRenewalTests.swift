import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Runtime
import Synchronization
import Testing

/// Contract §9, "Eight hours": at `activityRenewalSeconds` a still-active visit's Live Activity is renewed
/// (an end to it, then a start to the customer's push-to-start tokens), once, whichever worker finds it.
@Suite(.timeLimit(.minutes(3))) struct ActivityRenewalTests {
    static let t0 = 1_790_000_000.0

    /// The visit side, as the outbox sees it: the visits named in `ended` are over (not renewed).
    struct Renewer: ActivityRenewer {
        let ended: Set<String>
        func renewal(visitId: String, now: Double, on connection: PostgresConnection) throws -> ActivityRenewal? {
            guard !ended.contains(visitId) else { return nil }
            let at = Int64(now) - 1
            return ActivityRenewal(
                customerId: "c-1", end: end(visitId, timestamp: at),
                start: start(visitId, timestamp: at + 1, audience: .renewalStart(key: visitId, device: nil)))
        }
    }

    static var everyPass: OutboxConfiguration {
        var c = OutboxFixture.fastConfiguration
        c.renewalIntervalSeconds = 0
        return c
    }

    @Test func aDueActivityIsEndedThenStartedAgainOnceAcrossTwoWorkers() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock, configuration: Self.everyPass) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            // The visit's first start went out before the activity registered: it must not block the renewal's.
            _ = try await f.enqueue(start("v-1", timestamp: Int64(Self.t0)))
            let sender = RecordingSender()
            let metrics = Metrics()
            let one = f.worker(sender, metrics: metrics)
            let two = OutboxWorker(
                pool: f.pool, sender: sender, configuration: Self.everyPass, clock: clock, metrics: metrics,
                renewer: Renewer(ended: []))
            let first = OutboxWorker(
                pool: f.pool, sender: sender, configuration: Self.everyPass, clock: clock, metrics: metrics,
                renewer: Renewer(ended: []))
            try await f.drain(one)
            #expect(sender.calls.map(\.kind) == ["start"])
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")

            clock.advance(by: 27_000 - 10)
            _ = try await first.runOnce()
            _ = try await two.runOnce()
            #expect(sender.calls.count == 1)  // not due yet

            clock.advance(by: 20)
            _ = try await first.runOnce()
            _ = try await two.runOnce()
            try await f.runDue(first)
            #expect(sender.calls.map(\.kind) == ["start", "end"])  // the start waits a second behind the end
            clock.advance(by: 1)
            try await f.drain(first)
            let renewal = Array(sender.calls.dropFirst())
            #expect(renewal.map(\.kind) == ["end", "start"])
            #expect(renewal.map(\.request.deviceToken) == [token("a1"), token("s1")])
            let stamps = renewal.compactMap { apsTimestamp(of: $0.request.body) }
            #expect(stamps.count == 2 && stamps[0] < stamps[1])
            #expect(metrics.value("livevisits_activities_renewed_total") == 1)

            // Renewed once: later passes find nothing, and the old activity is no longer live for its visit.
            clock.advance(by: 120)
            _ = try await first.runOnce()
            _ = try await two.runOnce()
            let created = try await f.enqueue(update("v-1", timestamp: Int64(Self.t0) + 27_200, note: "after")).created
            #expect(created == 0)
            try await f.drain(first)
            #expect(sender.calls.count == 3)
        }
    }

    /// Contract §9: the renewal's `end` reaches APNs within 10 s of the activity falling due, whatever
    /// `activityRenewalSeconds` is — a short value (how staging tries renewal) included, with the workers'
    /// own pass interval, each of which had a pass just before the activity fell due.
    @Test func aShortRenewalSettingIsRenewedWithinTenSecondsOfDue() async throws {
        let clock = ManualClock(now: Self.t0)
        var configuration = OutboxFixture.fastConfiguration
        configuration.activityRenewalSeconds = 6
        try await withOutboxFixture(clock: clock, configuration: configuration) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            let sender = RecordingSender()
            let metrics = Metrics()
            let workers = (0..<2).map { _ in
                OutboxWorker(
                    pool: f.pool, sender: sender, configuration: configuration, clock: clock, metrics: metrics,
                    renewer: Renewer(ended: []))
            }
            for w in workers { try await f.runDue(w) }
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")

            clock.advance(by: 5)
            for w in workers { try await f.runDue(w) }
            #expect(sender.calls.isEmpty)  // not due yet

            clock.advance(by: 10)  // due + 9 s
            for w in workers { try await f.runDue(w) }
            #expect(sender.calls.map(\.kind) == ["end"])
            #expect(sender.calls.map(\.request.deviceToken) == [token("a1")])
            clock.advance(by: 1)
            for w in workers { try await f.drain(w) }
            #expect(sender.calls.map(\.kind) == ["end", "start"])
            #expect(metrics.value("livevisits_activities_renewed_total") == 1)
        }
    }

    @Test func withoutAPushToStartTokenOrOnceEndedNothingIsRenewed() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock, configuration: Self.everyPass) { f in
            // v-1's customer has no push-to-start token; v-2's has one but the visit has ended.
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            try await f.registerActivity(visit: "v-2", activity: "a-2", token: token("a2"))
            try await f.registerStart(customer: "c-2", device: "d-2", token: token("s2"))
            let sender = RecordingSender()
            let worker = OutboxWorker(
                pool: f.pool, sender: sender, configuration: Self.everyPass, clock: clock, renewer: Renewer(ended: ["v-2"]))
            clock.advance(by: 27_010)
            _ = try await worker.runOnce()
            try await f.drain(worker)
            #expect(sender.calls.isEmpty)
            // Still live until the 8 hours: an update reaches it.
            _ = try await f.enqueue(update("v-1", timestamp: Int64(Self.t0) + 27_010, note: "still"))
            try await f.drain(worker)
            #expect(sender.calls.map(\.request.deviceToken) == [token("a1")])
        }
    }
}
