import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Testing

@Suite(.timeLimit(.minutes(5))) struct EnqueueTests {
    let now = Int64(Date().timeIntervalSince1970)

    @Test func fansOutOneDeliveryPerLiveActivityWithItsOwnApnsId() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            try await f.registerActivity(visit: "v-1", activity: "a-2", token: token("a2"))
            try await f.registerActivity(visit: "v-2", activity: "a-3", token: token("a3"))
            let result = try await f.enqueue(update("v-1", timestamp: now))
            #expect(result.created == 2)
            let listed = try await f.store.list(state: .pending)
            #expect(Set(listed.compactMap(\.activityId)) == ["a-1", "a-2"])
            #expect(Set(listed.map(\.apnsId)).count == 2)
            #expect(listed.allSatisfy { UUID(uuidString: $0.apnsId) != nil })
        }
    }

    @Test func aNewerUpdateSupersedesOlderPendingOnesButNeverAnEnd() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let second = try await f.enqueue(update("v-1", timestamp: now + 1))
            #expect(second.created == 1 && second.superseded == 1)
            let ended = try await f.enqueue(end("v-1", timestamp: now + 2))
            #expect(ended.created == 1 && ended.superseded == 1)
            // Nothing after an end, not even a later update or a catch-up.
            let after = try await f.enqueue(update("v-1", timestamp: now + 3), end("v-1", timestamp: now + 2))
            #expect(after.created == 0)
            #expect(try await f.count(.pending) == 1)
            #expect(try await f.store.list(state: .pending).first?.kind == .end)
            #expect(try await f.count(.superseded) == 2)
        }
    }

    @Test func anOlderStateThanOnePendingIsNotEnqueued() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now + 5))
            let older = try await f.enqueue(update("v-1", timestamp: now))
            #expect(older.created == 0)
            // A catch-up repeating the pending state's timestamp replaces it (same state).
            let repeated = try await f.enqueue(update("v-1", timestamp: now + 5, audience: .activity("a-1")))
            #expect(repeated.created == 1 && repeated.superseded == 1)
        }
    }

    @Test func devicesWithLiveActivitiesOffGetNothing() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-on", token: token("on"), device: "d-on")
            try await f.registerActivity(visit: "v-1", activity: "a-off", token: token("off"), device: "d-off")
            try await f.registerStart(customer: "c-1", device: "d-on", token: token("s-on"))
            try await f.registerStart(customer: "c-1", device: "d-off", token: token("s-off"))
            try await f.setPreferences(customer: "c-1", device: "d-off", enabled: false)
            let updates = try await f.enqueue(update("v-1", timestamp: now))
            #expect(updates.created == 1)
            let starts = try await f.enqueue(start("v-9", timestamp: now))
            #expect(starts.created == 1)
            let devices = try await f.store.list(state: .pending).compactMap(\.deviceId)
            #expect(!devices.contains("d-off"))
        }
    }

    @Test func atMostOneStartPerVisitAndDeviceAndNoneOnceAnActivityExists() async throws {
        try await withOutboxFixture { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            try await f.registerStart(customer: "c-1", device: "d-2", token: token("s2"))
            #expect(try await f.enqueue(start("v-1", timestamp: now)).created == 2)
            #expect(try await f.enqueue(start("v-1", timestamp: now, audience: .pushToStartDevice("d-1"))).created == 0)
            // Another visit of the same customer gets its own start.
            try await f.registerActivity(visit: "v-2", activity: "a-1", token: token("a1"))
            // … unless a Live Activity of that visit already exists (it was started already).
            #expect(try await f.enqueue(start("v-2", timestamp: now)).created == 0)
            #expect(try await f.enqueue(start("v-3", timestamp: now, audience: .pushToStartDevice("d-2"))).created == 1)
        }
    }

    /// Contract §6 Starts: at most one start per visit and push-to-start token — not per device. One token
    /// registered under two device ids gets one start; a token rotated on a device, while the visit still
    /// has no Live Activity, gets the start its predecessor did not deliver.
    @Test func atMostOneStartPerVisitAndPushToStartToken() async throws {
        try await withOutboxFixture { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("shared"))
            try await f.registerStart(customer: "c-1", device: "d-2", token: token("shared"))  // re-registered under a new id
            #expect(try await f.enqueue(start("v-1", timestamp: now)).created == 1)
            #expect(try await f.enqueue(start("v-1", timestamp: now, audience: .pushToStartDevice("d-1"))).created == 0)
            let sender = RecordingSender()
            try await f.drain(f.worker(sender))
            #expect(sender.calls.map(\.request.deviceToken) == [token("shared")])

            try await f.registerStart(customer: "c-1", device: "d-3", token: token("before"))
            #expect(try await f.enqueue(start("v-2", timestamp: now, audience: .pushToStartDevice("d-3"))).created == 1)
            try await f.registerStart(customer: "c-1", device: "d-3", token: token("rotated"))
            #expect(try await f.enqueue(start("v-2", timestamp: now, audience: .pushToStartDevice("d-3"))).created == 1)
            #expect(try await f.enqueue(start("v-2", timestamp: now, audience: .pushToStartDevice("d-3"))).created == 0)
            try await f.drain(f.worker(sender))
            // The start enqueued for the old token is not sent to the new one as well: one start per token.
            #expect(sender.calls.map(\.request.deviceToken) == [token("shared"), token("rotated")])
            let cancelled = try await f.store.list(state: .cancelled)
            #expect(cancelled.map(\.lastReason) == ["push-to-start token replaced; the new token has its own start"])
        }
    }

    @Test func anEndCancelsAStartStillWaitingForItsTime() async throws {
        try await withOutboxFixture { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: now, notBefore: Double(now + 3600)))
            let ended = try await f.enqueue(end("v-1", timestamp: now + 1))
            #expect(ended.cancelledStarts == 1)
            #expect(try await f.count(.pending) == 0)
        }
    }

    @Test func independentIntentsShareOneStatementAndDependentOnesFollowInOrder() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            try await f.registerActivity(visit: "v-2", activity: "a-2", token: token("a2"))
            // A batch of commands on different visits, each with its update, pending-start re-plan and fallback: one
            // statement. A second update of v-1 must see the first (it supersedes it): a second statement after it.
            let batch = [
                update("v-1", timestamp: now), start("v-1", timestamp: now, audience: .pendingStarts),
                update("v-2", timestamp: now), alerting("v-2", timestamp: now),
            ]
            #expect(try f.outbox.enqueueStatements(batch).count == 1)
            #expect(try f.outbox.enqueueStatements(batch + [update("v-1", timestamp: now + 1)]).count == 2)
            // An end and a start audience of one visit: the end's cancelling must see the start's rows.
            #expect(try f.outbox.enqueueStatements([start("v-3", timestamp: now), end("v-3", timestamp: now + 1)]).count == 2)
            #expect(try f.outbox.enqueueStatements([start("v-3", timestamp: now), end("v-4", timestamp: now + 1)]).count == 1)

            let result = try await f.enqueue(
                update("v-1", timestamp: now), update("v-2", timestamp: now), update("v-1", timestamp: now + 1),
                update("v-2", timestamp: now + 1), end("v-1", timestamp: now + 2))
            #expect(result.created == 5 && result.superseded == 3 && result.cancelledStarts == 0)
            let pending = try await f.store.list(state: .pending).sorted { $0.id < $1.id }
            #expect(pending.map(\.visitId) == ["v-2", "v-1"])
            #expect(pending.map(\.kind) == [.update, .end])
            #expect(pending.map(\.apsTimestamp) == [now + 1, now + 2])
        }
    }

    @Test func aStartAndTheEndOfItsVisitInOneCallEndWithTheStartCancelled() async throws {
        try await withOutboxFixture { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            let result = try await f.enqueue(
                start("v-1", timestamp: now, notBefore: Double(now + 3600)), end("v-1", timestamp: now + 1))
            #expect(result.created == 1 && result.cancelledStarts == 1)
            #expect(try await f.count(.pending) == 0)
            #expect(try await f.count(.cancelled) == 1)
        }
    }

    @Test func invalidIntentsAreRefusedWithACode() async throws {
        try await withOutboxFixture { f in
            var bad = update("v-1", timestamp: now)
            bad.priority = 7
            do {
                _ = try await f.enqueue(bad)
                Issue.record("a priority of 7 was accepted")
            } catch let error as OutboxError {
                #expect(error.code == .invalidIntent)
            }
            var wrongAudience = start("v-1", timestamp: now)
            wrongAudience.audience = .liveActivities
            await #expect(throws: OutboxError.self) { _ = try await f.enqueue(wrongAudience) }
        }
    }
}

/// An ordinary notification to the customer's devices without a Live Activity of the visit (contract §9).
private func alerting(_ visit: String, timestamp: Int64) -> PushIntent {
    PushIntent(
        visitId: visit, customerId: "c-1", kind: .alert, audience: .fallbackDevices, priority: 10, apsTimestamp: timestamp,
        body: Array(#"{"aps":{"alert":{"title":"t","body":"b"}}}"#.utf8), expiresAfterSendingSeconds: 3600, visitVersion: 2,
        eventRecordedAt: Date().timeIntervalSince1970)
}
