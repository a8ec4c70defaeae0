import Foundation
import LiveActivityLedger
import Outbox
import OutboxTestSupport
import Postgres
import Runtime
import Testing

/// The ledger's rules as the outbox and its workers apply them, on real PostgreSQL with the manual clock:
/// starts per device, a dismissal kept through token rotation, renewal and fallbacks, the end of a replaced
/// activity, renewal capped, lapse and the fallback after it.
@Suite(.timeLimit(.minutes(3))) struct LedgerRulesTests {
    static let t0 = 1_790_000_000.0
    static let stamp = Int64(t0)

    /// Every worker pass looks for renewals and lapses; short renewal and lifetime, as staging sets them.
    static func configuration(renewal: Double = 100, lifetime: Double = 200, maxRenewals: Int = 2) -> OutboxConfiguration {
        var c = OutboxFixture.fastConfiguration
        c.renewalIntervalSeconds = 0
        c.activityRenewalSeconds = renewal
        c.activityLifetimeSeconds = lifetime
        c.maxRenewals = maxRenewals
        return c
    }

    /// The visit side of a renewal, as the outbox sees it: an end and a start with the current state.
    struct Renewer: ActivityRenewer {
        func renewal(visitId: String, now: Double, on connection: PostgresConnection) throws -> ActivityRenewal? {
            let at = Int64(now) - 1
            return ActivityRenewal(
                customerId: "c-1", end: end(visitId, timestamp: at),
                start: start(visitId, timestamp: at + 1, audience: .renewalStart(key: visitId, device: nil)))
        }
    }

    func worker(_ f: OutboxFixture, _ sender: RecordingSender, metrics: Metrics = Metrics()) -> OutboxWorker {
        OutboxWorker(
            pool: f.pool, sender: sender, configuration: f.configuration, clock: f.clock, metrics: metrics,
            renewer: Renewer())
    }

    func alerting(_ visit: String, timestamp: Int64) -> PushIntent {
        PushIntent(
            visitId: visit, customerId: "c-1", kind: .alert, audience: .fallbackDevices, priority: 10,
            apsTimestamp: timestamp, body: Array(#"{"aps":{"alert":{"title":"t","body":"b"}}}"#.utf8),
            expiresAfterSendingSeconds: 3600, visitVersion: 2, eventRecordedAt: Self.t0)
    }

    @Test func aStartGoesOnlyToDevicesThatShowNothingOfTheVisit() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock, configuration: Self.configuration()) { f in
            for device in ["d-1", "d-2", "d-3"] {
                try await f.registerStart(customer: "c-1", device: device, token: token("s-" + device))
            }
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")
            let sender = RecordingSender()
            #expect(try await f.enqueue(start("v-1", timestamp: Self.stamp)).created == 2)
            _ = try await f.enqueue(update("v-1", timestamp: Self.stamp + 1))
            try await f.drain(worker(f, sender))
            let starts = sender.calls.filter { $0.kind == "start" }.map(\.request.deviceToken)
            #expect(Set(starts) == [token("s-d-2"), token("s-d-3")])

            // The ledger: the activity, and the two devices the start went to.
            let entries = try await f.entries(visit: "v-1")
            let activity = try #require(entries.first { $0.activityId == "a-1" })
            #expect(activity.state == .active && activity.origin == .app && activity.deviceId == "d-1")
            #expect(activity.lastTimestamp == Self.stamp + 1 && activity.lastAcknowledgedAt == Self.stamp)
            #expect(activity.lapsesAt == Self.stamp + 200 && activity.renewsAt == Self.stamp + 100)
            #expect(activity.priority10LeftThisHour == 12)
            let starting = entries.filter { $0.state == .starting }
            #expect(Set(starting.compactMap(\.deviceId)) == ["d-2", "d-3"])
            #expect(starting.allSatisfy { $0.activityId == nil && $0.origin == .pushToStart && $0.beganAt == nil })

            // Had an activity: a device whose activity was forgotten gets no start of the visit either.
            let registry = f.registry
            _ = try await f.pool.withConnection {
                try registry.forgetLiveActivity(visitId: "v-1", activityId: "a-1", on: $0)
            }
            let again = start("v-1", timestamp: Self.stamp + 2, audience: .pushToStartDevice("d-1"))
            #expect(try await f.enqueue(again).created == 0)

            // An activity registered without a device could be on any of them: no device gets a start.
            try await f.registerActivity(visit: "v-2", activity: "a-2", token: token("a2"))
            #expect(try await f.enqueue(start("v-2", timestamp: Self.stamp)).created == 0)
        }
    }

    /// A phone may register the activity a start made before the worker has recorded APNs' answer: the
    /// start still on the wire makes it that start's activity all the same, not one the app started.
    @Test func anActivityRegisteredWhileItsStartIsOnTheWireIsThatStarts() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock, configuration: Self.configuration()) { f in
            for device in ["d-1", "d-2"] {
                try await f.registerStart(customer: "c-1", device: device, token: token("s-" + device))
            }
            #expect(try await f.enqueue(start("v-1", timestamp: Self.stamp)).created == 2)
            // On the wire to d-1 (claimed, no answer recorded yet); d-2's start still waits.
            _ = try await f.pool.query(
                "UPDATE deliveries SET state = 'sending' WHERE visit_id = 'v-1' AND kind = 'start' AND device_id = 'd-1'")
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")
            try await f.registerActivity(visit: "v-1", activity: "a-2", token: token("a2"), device: "d-2")
            let entries = try await f.entries(visit: "v-1")
            #expect(entries.first { $0.activityId == "a-1" }?.origin == .pushToStart)
            #expect(entries.first { $0.activityId == "a-2" }?.origin == .app, "a start not yet sent made nothing")
        }
    }

    @Test func aDismissalIsKeptThroughRotationRenewalAndFallbacks() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock, configuration: Self.configuration()) { f in
            for device in ["d-1", "d-2"] {
                try await f.registerStart(customer: "c-1", device: device, token: token("s-" + device))
                try await f.registerNotification(customer: "c-1", device: device, token: token("n-" + device))
            }
            let sender = RecordingSender()
            let worker = worker(f, sender)
            _ = try await f.enqueue(start("v-1", timestamp: Self.stamp))
            try await f.drain(worker)
            #expect(sender.calls.count == 2)

            // The activity the start put on d-1 registers: begun when APNs acknowledged the start.
            clock.advance(by: 30)
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")
            let registered = try #require(try await f.entries(visit: "v-1").first { $0.activityId == "a-1" })
            #expect(registered.origin == .pushToStart && registered.beganAt == Self.stamp)

            #expect(try await f.report(.dismissed, visit: "v-1", activity: "a-1") == .changed(.dismissed))
            #expect(try await f.report(.dismissed, visit: "v-1", activity: "a-1") == .unchanged)
            #expect(try await f.report(.active, visit: "v-1", activity: "a-1") == .unchanged)
            #expect(try await f.report(.active, visit: "v-1", activity: "nope") == .unknown)
            // Re-registering the dismissed activity's token does not bring it back.
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1-again"), device: "d-1")
            #expect(try await f.entries(visit: "v-1").first { $0.activityId == "a-1" }?.state == .dismissed)
            #expect(try await f.enqueue(update("v-1", timestamp: Self.stamp + 40)).created == 0)

            // The push-to-start token rotates: still no start of the visit to that device.
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s-d-1-rotated"))
            let late = start("v-1", timestamp: Self.stamp + 41, audience: .pushToStartDevice("d-1"))
            #expect(try await f.enqueue(late).created == 0)

            // No fallback for that visit on d-1, even with Live Activities switched off there; d-2, whose start
            // may still become an activity, gets none either (it has a push-to-start token).
            try await f.setPreferences(customer: "c-1", device: "d-1", enabled: false)
            #expect(try await f.enqueue(alerting("v-1", timestamp: Self.stamp + 42)).created == 0)
            try await f.setPreferences(customer: "c-1", device: "d-1", enabled: true)

            // Renewal: an activity without a device is renewed onto every device that shows nothing of the
            // visit and did not dismiss one — d-2, never d-1.
            try await f.registerActivity(visit: "v-1", activity: "a-3", token: token("a3"))
            let before = sender.calls.count
            clock.advance(by: 101)
            _ = try await worker.runOnce()
            try await f.runDue(worker)
            clock.advance(by: 1)
            try await f.drain(worker)
            let renewal = sender.calls.dropFirst(before)
            #expect(renewal.map(\.kind) == ["end", "start"])
            #expect(renewal.map(\.request.deviceToken) == [token("a3"), token("s-d-2")])
            #expect(try await f.entries(visit: "v-1").first { $0.activityId == "a-3" }?.state == .renewed)
        }
    }

    @Test func aReplacedActivityGetsItsEndAndNothingElse() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock, configuration: Self.configuration()) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")
            try await f.registerActivity(visit: "v-1", activity: "a-2", token: token("a2"), device: "d-1")
            let ledger = f.ledger
            let older = try await f.pool.withTransaction { c in
                let older = try ledger.others(visitId: "v-1", deviceId: "d-1", than: "a-2", on: c)
                try ledger.retireEnding(visitId: "v-1", activityIds: older, as: .replaced, on: c)
                return older
            }
            #expect(older == ["a-1"])
            var ending = end("v-1", timestamp: Self.stamp)
            ending.audience = .activity("a-1")
            #expect(try await f.enqueue(ending).created == 1)
            #expect(try await f.enqueue(update("v-1", timestamp: Self.stamp + 1)).created == 1)
            let sender = RecordingSender()
            try await f.drain(worker(f, sender))
            // Two targets in one batch go out side by side: which is recorded first is not promised.
            let sent = sender.calls.map { "\($0.kind ?? "-") \($0.request.deviceToken)" }.sorted()
            #expect(sent == ["end \(token("a1"))", "update \(token("a2"))"])
            let states = try await f.entries(visit: "v-1").map { ($0.activityId, $0.state) }
            #expect(states.contains { $0 == ("a-1", .replaced) } && states.contains { $0 == ("a-2", .active) })
        }
    }

    @Test func renewalIsCappedThenTheActivityLapsesAndItsDeviceGetsFallbacks() async throws {
        let clock = ManualClock(now: Self.t0)
        let configuration = Self.configuration(renewal: 100, lifetime: 150, maxRenewals: 1)
        try await withOutboxFixture(clock: clock, configuration: configuration) { f in
            for device in ["d-1", "d-2"] {
                try await f.registerStart(customer: "c-1", device: device, token: token("s-" + device))
                try await f.registerNotification(customer: "c-1", device: device, token: token("n-" + device))
            }
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"), device: "d-1")
            let sender = RecordingSender()
            let metrics = Metrics()
            let worker = worker(f, sender, metrics: metrics)

            clock.advance(by: 101)
            _ = try await worker.runOnce()
            try await f.runDue(worker)
            clock.advance(by: 1)
            try await f.drain(worker)
            // Renewed once, onto the renewed activity's own device only.
            #expect(sender.calls.map(\.kind) == ["end", "start"])
            #expect(sender.calls.map(\.request.deviceToken) == [token("a1"), token("s-d-1")])

            // The renewal's activity registers: origin renewal, begun at the start's acknowledgement; the cap
            // reached, it will not be renewed.
            try await f.registerActivity(visit: "v-1", activity: "a-2", token: token("a2"), device: "d-1")
            let renewed = try #require(try await f.entries(visit: "v-1").first { $0.activityId == "a-2" })
            let began = Self.stamp + 102
            #expect(renewed.origin == .renewal && renewed.beganAt == began)
            #expect(renewed.renewsAt == nil && renewed.lapsesAt == began + 150)

            // Its lifetime runs out: lapsed, nothing more pushed to it, and d-1 gets the fallback notification
            // (d-2, which a start can still reach, does not).
            clock.advance(by: 149)
            _ = try await worker.runOnce()
            #expect(try await f.entries(visit: "v-1").first { $0.activityId == "a-2" }?.state == .active)
            clock.advance(by: 2)
            _ = try await worker.runOnce()
            let lapsed = try #require(try await f.entries(visit: "v-1").first { $0.activityId == "a-2" })
            #expect(lapsed.state == .lapsed && lapsed.lapsesAt == nil && lapsed.renewsAt == nil)
            #expect(metrics.value("livevisits_activities_lapsed_total") == 1)
            #expect(sender.calls.count == 2)
            #expect(try await f.enqueue(update("v-1", timestamp: Self.stamp + 300)).created == 0)
            #expect(try await f.enqueue(alerting("v-1", timestamp: Self.stamp + 301)).created == 1)
            try await f.drain(worker)
            #expect(sender.calls.last?.request.deviceToken == token("n-d-1"))
        }
    }
}
