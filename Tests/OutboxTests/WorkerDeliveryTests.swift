import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Runtime
import Synchronization
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(5))) struct WorkerDeliveryTests {
    let now = Int64(Date().timeIntervalSince1970)

    @Test func sendsWithTheTokenRegisteredAtSendTime() async throws {
        try await withOutboxFixture { f in
            #expect(try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("old")) == .new)
            _ = try await f.enqueue(update("v-1", timestamp: now))
            #expect(
                try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("new"), environment: .production)
                    == .rotated
            )
            let sender = RecordingSender()
            try await f.drain(f.worker(sender))
            let calls = sender.calls
            #expect(calls.count == 1)
            #expect(calls.first?.request.deviceToken == token("new"))
            #expect(calls.first?.request.environment == .production)
            #expect(calls.first?.request.priority == .low)
            #expect(calls.first?.request.expiration == now + 7200)
            #expect(try await f.count(.sent) == 1)
            let attempts = try await f.store.attempts(deliveryId: try await f.store.list().first!.id)
            #expect(attempts.count == 1 && attempts.first?.status == 200)
        }
    }

    @Test func startAndEndExpireFourHoursAfterSending() async throws {
        // The worker's clock stands still, so "four hours after sending" is one exact second.
        let clock = ManualClock(now: Double(now))
        try await withOutboxFixture(clock: clock) { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: now))
            let sender = RecordingSender()
            try await f.drain(f.worker(sender))
            let request = try #require(sender.calls.first?.request)
            #expect(event(of: request.body) == "start" && request.priority == .immediate)
            #expect(request.expiration == now + 14_400)
        }
    }

    @Test func threeWorkersDeliverTwoThousandWithoutClaimingAnyTwice() async throws {
        var configuration = OutboxFixture.fastConfiguration
        configuration.batchSize = 50
        try await withOutboxFixture(configuration: configuration) { f in
            let visits = 400
            for v in 0..<visits {
                for a in 0..<5 {
                    try await f.registerActivity(visit: "v-\(v)", activity: "a-\(a)", token: token("v\(v)a\(a)"))
                }
            }
            let sender = RecordingSender(delaySeconds: 0.001)
            let workers = (0..<3).map { _ in f.worker(sender) }
            let running = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for w in workers { group.addTask { try await w.run() } }
                    try await group.waitForAll()
                }
            }
            // Enqueue while the workers run, in bursts as the API would.
            for v in 0..<visits { _ = try await f.enqueue(update("v-\(v)", timestamp: now)) }
            try await eventually(
                "all \(visits * 5) pushes sent", within: 180, pollingEvery: 0.05,
                between: { for w in workers { w.wakeUp.signal() } }
            ) { try await f.count(.sent) >= visits * 5 }
            running.cancel()
            _ = await running.result
            let calls = sender.calls
            #expect(calls.count == 2000)
            #expect(Set(calls.map(\.request.apnsId)).count == 2000)
            #expect(Set(calls.map(\.request.deviceToken)).count == 2000)
            #expect(sender.overlaps == 0)
            #expect(try await f.count(.sent) == 2000)
            #expect(try await f.count(.sending) == 0)
        }
    }

    @Test func aWorkerThatDiesMidBatchLosesNothingAndDuplicatesShareTheirApnsId() async throws {
        var configuration = OutboxFixture.fastConfiguration
        configuration.leaseSeconds = 1
        configuration.reapIntervalSeconds = 0.1
        try await withOutboxFixture(configuration: configuration) { f in
            for a in 0..<40 { try await f.registerActivity(visit: "v-1", activity: "a-\(a)", token: token("a\(a)")) }
            _ = try await f.enqueue(update("v-1", timestamp: now))
            // The dead worker: claims a batch under its lease, sends half of it, and never completes or heartbeats
            // (what kill -9 leaves in the database).
            let sender = RecordingSender()
            let lease = UUID().uuidString.lowercased()
            let claimedIds = try await f.pool.withConnection { connection -> [Int64] in
                try connection.query(
                    """
                    UPDATE deliveries SET state = 'sending', lease_token = \(lease)::uuid,
                           lease_expires_at = \(Date().timeIntervalSince1970 + 1), claimed_at = \(Date().timeIntervalSince1970),
                           attempts = attempts + 1
                    WHERE state = 'pending' RETURNING id
                    """
                ).rows.map { try $0.int64("id") }
            }
            #expect(claimedIds.count == 40)
            let listed = try await f.store.list(state: .sending)
            for d in listed.prefix(20) {
                _ = await sender.send(
                    OutgoingPush(
                        deviceToken: token("a\(d.activityId!.dropFirst(2))"), environment: .sandbox,
                        priority: .low, expiration: now + 7200, apnsId: d.apnsId, body: body(.update, timestamp: now)))
            }
            // A live worker takes over once the lease runs out.
            let survivor = f.worker(sender)
            try await withRunning({ try await survivor.run() }) { running in
                try await eventually("the survivor sent all 40", within: 120, pollingEvery: 0.05) {
                    try await f.count(.sent) >= 40
                }
                running.cancel()
                _ = await running.result
                let byApnsId = Dictionary(grouping: sender.calls, by: \.request.apnsId)
                #expect(byApnsId.count == 40)
                #expect(byApnsId.values.filter { $0.count == 2 }.count == 20)
                for calls in byApnsId.values { #expect(Set(calls.map(\.request.deviceToken)).count == 1) }
            }
        }
    }

    /// The first update is held on the wire (at a gate) while nine more and the end are enqueued: each
    /// supersedes the pending one before it, so once the gate opens only the end follows the first.
    @Test func coalescingSendsTheLastStateAndNeverAnOlderAfterANewer() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            let gate = Gate()
            defer { gate.open() }
            let sender = RecordingSender(gate: gate)
            let worker = f.worker(sender)
            try await withRunning({ try await worker.run() }) { running in
                _ = try await f.enqueue(update("v-1", timestamp: now, note: "u0"))
                try await eventually("the first update held on the wire") { gate.waiting == 1 }
                for i in 1..<10 { _ = try await f.enqueue(update("v-1", timestamp: now + Int64(i), note: "u\(i)")) }
                _ = try await f.enqueue(end("v-1", timestamp: now + 10))
                #expect(try await f.count(.superseded) == 9)
                #expect(sender.started == 1, "nothing else to the token while its first push is in flight")
                gate.open()
                try await eventually("every delivery finished", pollingEvery: 0.05) {
                    try await f.count(.pending) + f.count(.sending) == 0
                }
                running.cancel()
                _ = await running.result
                let stamps = sender.calls.compactMap { apsTimestamp(of: $0.request.body) }
                #expect(stamps == [now, now + 10])
                #expect(sender.calls.map(\.kind) == ["update", "end"])
                #expect(sender.overlaps == 0)
                #expect(try await f.count(.superseded) == 9)
                #expect(try await f.count(.sent) == 2)
            }
        }
    }

    @Test func gracefulShutdownLeavesNothingHeld() async throws {
        try await withOutboxFixture { f in
            for a in 0..<30 { try await f.registerActivity(visit: "v-1", activity: "a-\(a)", token: token("a\(a)")) }
            let gate = Gate()
            defer { gate.open() }
            let sender = RecordingSender(gate: gate)
            let worker = f.worker(sender)
            try await withRunning({ try await worker.run() }) { running in
                _ = try await f.enqueue(update("v-1", timestamp: now))
                try await eventually("a batch on the wire") { gate.waiting > 0 }
                running.cancel()
                gate.open()  // the sends on the wire finish; what was claimed but not sent goes back
                _ = await running.result
                #expect(try await f.count(.sending) == 0)
                #expect(try await f.count(.sent) + f.count(.pending) == 30)
            }
        }
    }
}
