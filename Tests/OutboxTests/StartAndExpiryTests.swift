import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Runtime
import Testing

@Suite(.timeLimit(.minutes(5))) struct StartAndExpiryTests {
    static let t0 = 1_790_000_000.0

    @Test func aDeferredStartWaitsUntilTheLeadTimeBeforeTheArrivalWindow() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: Int64(Self.t0), arrival: Int64(Self.t0) + 3 * 3600))
            let sender = RecordingSender()
            let worker = f.worker(sender)
            #expect(try await worker.runOnce() == 0)
            clock.advance(by: 3600 - 1)
            #expect(try await worker.runOnce() == 0)
            clock.advance(by: 2)
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.map(\.kind) == ["start"])
        }
    }

    @Test func anExplicitNotBeforeWinsAndTheLeadTimeIsConfigurable() async throws {
        let clock = ManualClock(now: Self.t0)
        var configuration = OutboxFixture.fastConfiguration
        configuration.startLeadTimeSeconds = 600
        try await withOutboxFixture(clock: clock, configuration: configuration) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            try await f.registerStart(customer: "c-2", device: "d-2", token: token("s2"))
            _ = try await f.enqueue(start("v-1", timestamp: Int64(Self.t0), arrival: Int64(Self.t0) + 1200))
            _ = try await f.enqueue(
                start("v-2", customer: "c-2", timestamp: Int64(Self.t0), notBefore: Self.t0 + 60, arrival: Int64(Self.t0) + 1200))
            let sender = RecordingSender()
            let worker = f.worker(sender)
            clock.advance(by: 61)
            #expect(try await worker.runOnce() == 1)
            clock.advance(by: 600)
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.count == 2)
        }
    }

    /// A start waits hours for its window; an activity of the visit registered meanwhile (the app started
    /// one, or a start to another token did) means this start would put a second one on the phone.
    @Test func aDeferredStartIsNotSentOnceTheVisitHasALiveActivity() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: Int64(Self.t0), arrival: Int64(Self.t0) + 3 * 3600))
            clock.advance(by: 600)
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            clock.advance(by: 3600)
            let sender = RecordingSender()
            #expect(try await f.worker(sender).runOnce() == 1)
            #expect(sender.calls.isEmpty)
            let cancelled = try #require(try await f.store.list(state: .cancelled).first)
            #expect(cancelled.kind == .start)
            #expect(cancelled.lastReason == "the visit already has a live activity")
        }
    }

    /// Every push carries the full current state: a newer event replaces a waiting start's body,
    /// timestamp and release time (a new delivery with its own apns-id; the old one superseded), creates
    /// no start where none waits, and leaves alone a start that may already have gone out.
    @Test func aNewerStateReplacesAWaitingStart() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            let t0 = Int64(Self.t0)
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: t0, arrival: t0 + 3 * 3600))
            let booked = try #require(try await f.store.list(state: .pending).first)

            // The window moves 30 minutes earlier with the technician on the way.
            clock.advance(by: 100)
            var replacement = start("v-1", timestamp: t0 + 100, arrival: t0 + 150 * 60, audience: .pendingStarts)
            replacement.body = body(.start, timestamp: t0 + 100, note: "enRoute")
            let replaced = try await f.enqueue(replacement)
            #expect(replaced.created == 1 && replaced.superseded == 1)
            // The same state again, or an older one, replaces nothing.
            #expect(try await f.enqueue(replacement).created == 0)
            // No start is created where none waits (another visit, another customer's token).
            try await f.registerStart(customer: "c-2", device: "d-2", token: token("s2"))
            #expect(
                try await f.enqueue(start("v-2", customer: "c-2", timestamp: t0 + 100, audience: .pendingStarts)).created == 0)

            let sender = RecordingSender()
            let worker = f.worker(sender)
            clock.advance(by: 30 * 60 - 100 - 1)  // the booked start's release time: not yet the new one's
            #expect(try await worker.runOnce() == 0)
            clock.advance(by: 2)
            #expect(try await worker.runOnce() == 1)
            let sent = try #require(sender.calls.first?.request)
            #expect(apsTimestamp(of: sent.body) == t0 + 100)
            #expect(String(decoding: sent.body, as: UTF8.self).contains("enRoute"))
            #expect(sent.apnsId != booked.apnsId)
            #expect(try await f.store.delivery(id: booked.id)?.state == .superseded)
        }
    }

    @Test func aStartOfUnknownOutcomeIsNotReplacedAndAnEndStillCancelsAWaitingOne() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            let t0 = Int64(Self.t0)
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: t0))
            let sender = RecordingSender { _, _ in .fail(nil, "timeout", .retryable) }
            #expect(try await f.worker(sender).runOnce() == 1)  // it may be on the phone now
            #expect(try await f.enqueue(start("v-1", timestamp: t0 + 1, audience: .pendingStarts)).created == 0)

            _ = try await f.enqueue(start("v-2", timestamp: t0, arrival: t0 + 3 * 3600))
            #expect(
                try await f.enqueue(start("v-2", timestamp: t0 + 1, arrival: t0 + 3 * 3600, audience: .pendingStarts)).created
                    == 1)
            #expect(try await f.enqueue(end("v-2", timestamp: t0 + 2)).cancelledStarts == 1)
            #expect(try await f.enqueue(start("v-2", timestamp: t0 + 3, audience: .pendingStarts)).created == 0)
        }
    }

    /// What a worker killed mid-send leaves behind: the start claimed under a lease that nobody renews.
    private func abandonClaim(_ f: OutboxFixture, at now: Double) async throws {
        let lease = UUID().uuidString.lowercased()
        _ = try await f.pool.withConnection { connection in
            try connection.query(
                """
                UPDATE deliveries SET state = 'sending', lease_token = \(lease)::uuid, lease_expires_at = \(now + 5),
                       claimed_at = \(now), attempts = attempts + 1
                WHERE state = 'pending'
                """)
        }
    }

    @Test func aStartKilledMidSendIsNotResentOnceItsActivityRegistered() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: Int64(Self.t0)))
            try await abandonClaim(f, at: Self.t0)
            let sender = RecordingSender()
            let worker = f.worker(sender)
            clock.advance(by: 10)  // the lease ran out; the start's outcome is unknown
            #expect(try await worker.runOnce() == 0)
            #expect(try await f.count(.pending) == 1)
            // The started activity reports its update token within the grace period.
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            clock.advance(by: 60)
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.isEmpty)
            #expect(try await f.count(.sent) == 1)
        }
    }

    @Test func aStartKilledMidSendIsResentAfterTheGracePeriodWhenNoActivityRegistered() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: Int64(Self.t0)))
            let apnsId = try #require(try await f.store.list().first?.apnsId)
            try await abandonClaim(f, at: Self.t0)
            let sender = RecordingSender()
            let worker = f.worker(sender)
            clock.advance(by: 10)
            #expect(try await worker.runOnce() == 0)
            clock.advance(by: 30)
            #expect(try await worker.runOnce() == 0)  // still within the grace period
            clock.advance(by: 21)
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.map(\.request.apnsId) == [apnsId])
        }
    }

    @Test func aStartThatTimedOutWaitsForTheGracePeriodToo() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: Int64(Self.t0)))
            let sender = RecordingSender { _, n in n == 0 ? .fail(nil, "timeout", .retryable) : .ok }
            let worker = f.worker(sender)
            #expect(try await worker.runOnce() == 1)
            clock.advance(by: 30)
            #expect(try await worker.runOnce() == 0)
            clock.advance(by: 31)
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.count == 2)
            #expect(try await f.count(.sent) == 1)
        }
    }

    @Test func anUpdatePastItsExpirationIsMarkedExpiredNotSent() async throws {
        let clock = ManualClock(now: Self.t0)
        // A day passes below: longer than an activity lives (contract §9, `DeliveryPolicyTests`); this test
        // is about expiry, so the activity is given two days.
        var configuration = OutboxFixture.fastConfiguration
        configuration.activityLifetimeSeconds = 2 * 86_400
        try await withOutboxFixture(clock: clock, configuration: configuration) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: Int64(Self.t0), stale: Int64(Self.t0) + 120))
            clock.advance(by: 121)
            let sender = RecordingSender()
            let worker = f.worker(sender)
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.isEmpty)
            #expect(try await f.count(.expired) == 1)
            // An end never expires before it is sent.
            _ = try await f.enqueue(end("v-1", timestamp: Int64(Self.t0) + 200))
            clock.advance(by: 86_400)
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.map(\.kind) == ["end"])
        }
    }

    /// A catch-up (an update measured from its send, `expiresAfterSendingSeconds` 0) for an activity that
    /// registered after the state's stale date: sent at once with `apns-expiration` = now, never expired.
    @Test func aCatchUpPastItsStaleDateIsSentAtOnce() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            clock.advance(by: 600)
            var catchUp = update("v-1", timestamp: Int64(Self.t0), stale: Int64(Self.t0) + 120, audience: .activity("a-1"))
            catchUp.expiresAfterSendingSeconds = 0
            _ = try await f.enqueue(catchUp)
            clock.advance(by: 30)  // still waiting (in backoff, say): not expired either
            let sender = RecordingSender()
            #expect(try await f.worker(sender).runOnce() == 1)
            #expect(sender.calls.map(\.kind) == ["update"])
            #expect(sender.calls.first?.request.expiration == Int64(Self.t0) + 630)
            #expect(try await f.count(.sent) == 1)
            #expect(try await f.count(.expired) == 0)
        }
    }

    /// Before its stale date a catch-up expires with it, as any update (contract §6 `apns-expiration`);
    /// and a newer state still supersedes it: only the newer one goes.
    @Test func aCatchUpKeepsItsStaleDateAheadAndYieldsToANewerState() async throws {
        let clock = ManualClock(now: Self.t0)
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            try await f.registerActivity(visit: "v-1", activity: "a-2", token: token("a2"))
            var catchUp = update("v-1", timestamp: Int64(Self.t0), stale: Int64(Self.t0) + 120, audience: .activity("a-1"))
            catchUp.expiresAfterSendingSeconds = 0
            _ = try await f.enqueue(catchUp)
            var second = catchUp
            second.audience = .activity("a-2")
            _ = try await f.enqueue(second)
            let sender = RecordingSender()
            let worker = f.worker(sender)
            #expect(try await worker.runOnce() == 2)
            #expect(sender.calls.map(\.request.expiration) == [Int64(Self.t0) + 120, Int64(Self.t0) + 120])

            _ = try await f.enqueue(catchUp)  // a-1 registers again: a catch-up of the same state
            clock.advance(by: 300)
            let newer = try await f.enqueue(update("v-1", timestamp: Int64(Self.t0) + 300, stale: Int64(Self.t0) + 420))
            #expect(newer.created == 2)
            #expect(try await worker.runOnce() == 2)
            #expect(
                sender.calls.dropFirst(2).compactMap { apsTimestamp(of: $0.request.body) } == [
                    Int64(Self.t0) + 300, Int64(Self.t0) + 300,
                ])
            #expect(try await f.count(.superseded) == 1)
        }
    }

    @Test func switchingLiveActivitiesOffStopsTheDevicesDeliveries() async throws {
        try await withOutboxFixture { f in
            let now = Int64(Date().timeIntervalSince1970)
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("d1"), device: "d-1")
            try await f.registerActivity(visit: "v-1", activity: "a-2", token: token("d2"), device: "d-2")
            _ = try await f.enqueue(update("v-1", timestamp: now))
            try await f.setPreferences(customer: "c-1", device: "d-1", enabled: false)
            _ = try await f.enqueue(update("v-1", timestamp: now + 1), end("v-1", timestamp: now + 2))
            let sender = RecordingSender()
            try await f.drain(f.worker(sender))
            #expect(Set(sender.calls.map(\.request.deviceToken)) == [token("d2")])
            #expect(try await f.count(.cancelled) == 1)
            // Switched back on, the device is served again.
            try await f.setPreferences(customer: "c-1", device: "d-1", enabled: true)
            #expect(try await f.enqueue(end("v-1", timestamp: now + 2)).created == 1)
        }
    }
}
