import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Runtime
import TestSupport
import Testing

/// The attempt APNs acknowledged is kept on the delivery row, not as a `delivery_attempts` row (migration
/// 0018); `OutboxStore.attempts(deliveryId:)` still answers every attempt, oldest first.
@Suite(.timeLimit(.minutes(2))) struct AcknowledgedAttemptTests {
    let now = Int64(Date().timeIntervalSince1970)

    /// The `delivery_attempts` rows of a delivery: (attempt, status), oldest first.
    func storedRows(_ f: OutboxFixture, delivery id: Int64) async throws -> [[Int?]] {
        try await f.pool.query(
            "SELECT attempt, status FROM delivery_attempts WHERE delivery_id = \(id) ORDER BY attempt"
        ).rows.map { [try $0.int("attempt"), $0.optionalInt64("status").map(Int.init)] }
    }

    @Test func anAcknowledgedFirstTryIsNoRowYetIsAnsweredAsTheOneAttempt() async throws {
        // The worker's clock stands still, so the attempt's time is one exact second.
        let clock = ManualClock(now: Double(now))
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            try await f.drain(f.worker(RecordingSender()))

            let delivery = try #require(try await f.store.list().first)
            #expect(delivery.state == .sent && delivery.attempts == 1)
            #expect(try await storedRows(f, delivery: delivery.id).isEmpty)
            let attempts = try await f.store.attempts(deliveryId: delivery.id)
            #expect(attempts.count == 1)
            let only = try #require(attempts.first)
            #expect(only.deliveryId == delivery.id && only.attempt == 1)
            #expect(only.attemptedAt == Double(now))
            #expect(only.status == 200 && only.reason == nil)
            #expect(only.latencySeconds == 0.001)
            #expect(only.retryAfterSeconds == nil)
        }
    }

    @Test func aFailureThenAnAcknowledgementAreTwoAttemptsTheFailureARow() async throws {
        let clock = ManualClock(now: Double(now))
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let sender = RecordingSender { _, n in n == 0 ? .fail(503, "ServiceUnavailable", .retryable) : .ok }
            let worker = f.worker(sender)
            #expect(try await worker.runOnce() == 1)
            clock.advance(by: 5)  // past any backoff of the fast configuration (at most 1 s)
            try await f.drain(worker)

            let delivery = try #require(try await f.store.list().first)
            #expect(delivery.state == .sent && delivery.attempts == 2)
            #expect(try await storedRows(f, delivery: delivery.id) == [[1, 503]])
            let attempts = try await f.store.attempts(deliveryId: delivery.id)
            #expect(attempts.map(\.attempt) == [1, 2])
            #expect(attempts.map(\.status) == [503, 200])
            #expect(attempts.map(\.reason) == ["ServiceUnavailable", nil])
            #expect(attempts.map(\.attemptedAt) == [Double(now), Double(now) + 5])
            #expect(attempts.map(\.latencySeconds) == [0.001, 0.001])
            let backoff = try #require(attempts.first?.retryAfterSeconds)
            #expect(backoff >= 0 && backoff <= f.configuration.backoff.ceiling(retry: 0))
            #expect(attempts.last?.retryAfterSeconds == nil)
        }
    }

    @Test func anAcknowledgementUnderALeaseTakenOverStaysARow() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let gate = Gate()
            defer { gate.open() }
            let worker = f.worker(RecordingSender(gate: gate))
            let cycle = Task { try await worker.runOnce() }
            try await eventually("the send held at the gate") { gate.waiting == 1 }
            // Another worker takes the delivery over (its lease ran out, it was reclaimed) while APNs answers.
            try await f.pool.query(
                "UPDATE deliveries SET lease_token = gen_random_uuid(), attempts = attempts + 1 WHERE state = 'sending'")
            gate.open()
            _ = try await cycle.value

            // The stale completion changed nothing on the delivery row, so its attempt is a row of its own.
            let delivery = try #require(try await f.store.list().first)
            #expect(delivery.state == .sending && delivery.attempts == 2)
            #expect(try await storedRows(f, delivery: delivery.id) == [[1, 200]])
            #expect(try await f.store.attempts(deliveryId: delivery.id).map(\.status) == [200])
        }
    }

    @Test func aStartFoundDeliveredWithoutASendAddsNoAttempt() async throws {
        let clock = ManualClock(now: Double(now))
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: now))
            let sender = RecordingSender { _, _ in .fail(nil, "timeout", .retryable) }
            let worker = f.worker(sender)
            #expect(try await worker.runOnce() == 1)
            // The start arrived after all: its activity registers within the grace period, and the next claim
            // finishes the delivery as sent without sending (its attempt count still counts that claim).
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            clock.advance(by: 61)
            #expect(try await worker.runOnce() == 1)
            #expect(sender.calls.count == 1)

            let delivery = try #require(try await f.store.list().first)
            #expect(delivery.state == .sent && delivery.attempts == 2)
            let attempts = try await f.store.attempts(deliveryId: delivery.id)
            #expect(attempts.map(\.attempt) == [1])
            #expect(attempts.map(\.reason) == ["timeout"])
            #expect(attempts.first?.status == nil)
        }
    }
}
