import Foundation
import Outbox
import Postgres
import Runtime
import Synchronization
import Testing

@Suite struct WorkerDeliveryTests {
    let now = Int64(Date().timeIntervalSince1970)

    @Test func sendsWithTheTokenRegisteredAtSendTime() async throws {
        let f = try await OutboxFixture.make()
        defer { Task { await f.close() } }
        #expect(try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("old")) == .new)
        _ = try await f.enqueue(update("v-1", timestamp: now))
        #expect(try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("new"), environment: .production) == .rotated)
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

    @Test func startAndEndExpireFourHoursAfterSending() async throws {
        let f = try await OutboxFixture.make()
        defer { Task { await f.close() } }
        try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
        _ = try await f.enqueue(start("v-1", timestamp: now))
        let sender = RecordingSender()
        try await f.drain(f.worker(sender))
        let request = try #require(sender.calls.first?.request)
        #expect(event(of: request.body) == "start" && request.priority == .immediate)
        #expect(abs(request.expiration - (Int64(Date().timeIntervalSince1970) + 14_400)) <= 2)
    }

    @Test func threeWorkersDeliverTwoThousandWithoutClaimingAnyTwice() async throws {
        var configuration = OutboxFixture.fastConfiguration
        configuration.batchSize = 50
        let f = try await OutboxFixture.make(configuration: configuration)
        defer { Task { await f.close() } }
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
        while try await f.count(.sent) < visits * 5 {
            for w in workers { w.wakeUp.signal() }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
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

    @Test func aWorkerThatDiesMidBatchLosesNothingAndDuplicatesShareTheirApnsId() async throws {
        var configuration = OutboxFixture.fastConfiguration
        configuration.leaseSeconds = 1
        configuration.reapIntervalSeconds = 0.1
        let f = try await OutboxFixture.make(configuration: configuration)
        defer { Task { await f.close() } }
        for a in 0..<40 { try await f.registerActivity(visit: "v-1", activity: "a-\(a)", token: token("a\(a)")) }
        _ = try await f.enqueue(update("v-1", timestamp: now))
        // The dead worker: claims a batch under its lease, sends half of it, and never completes or heartbeats
        // (what kill -9 leaves in the database).
        let sender = RecordingSender()
        let lease = UUID().uuidString.lowercased()
        let claimedIds = try await f.pool.withConnection { connection -> [Int64] in
            try connection.query("""
                UPDATE deliveries SET state = 'sending', lease_token = \(lease)::uuid,
                       lease_expires_at = \(Date().timeIntervalSince1970 + 1), claimed_at = \(Date().timeIntervalSince1970),
                       attempts = attempts + 1
                WHERE state = 'pending' RETURNING id
                """).rows.map { try $0.int64("id") }
        }
        #expect(claimedIds.count == 40)
        let listed = try await f.store.list(state: .sending)
        for d in listed.prefix(20) {
            _ = await sender.send(OutgoingPush(deviceToken: token("a\(d.activityId!.dropFirst(2))"), environment: .sandbox,
                priority: .low, expiration: now + 7200, apnsId: d.apnsId, body: body(.update, timestamp: now)))
        }
        // A live worker takes over once the lease runs out.
        let survivor = f.worker(sender)
        let running = Task { try await survivor.run() }
        while try await f.count(.sent) < 40 { try await Task.sleep(nanoseconds: 50_000_000) }
        running.cancel()
        _ = await running.result
        let byApnsId = Dictionary(grouping: sender.calls, by: \.request.apnsId)
        #expect(byApnsId.count == 40)
        #expect(byApnsId.values.filter { $0.count == 2 }.count == 20)
        for calls in byApnsId.values { #expect(Set(calls.map(\.request.deviceToken)).count == 1) }
    }

    @Test func coalescingSendsTheLastStateAndNeverAnOlderAfterANewer() async throws {
        let f = try await OutboxFixture.make()
        defer { Task { await f.close() } }
        try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
        let sender = RecordingSender(delaySeconds: 0.15)
        let worker = f.worker(sender)
        let running = Task { try await worker.run() }
        for i in 0..<10 {
            _ = try await f.enqueue(update("v-1", timestamp: now + Int64(i), note: "u\(i)"))
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        _ = try await f.enqueue(end("v-1", timestamp: now + 10))
        while try await f.count(.pending) + f.count(.sending) > 0 { try await Task.sleep(nanoseconds: 50_000_000) }
        running.cancel()
        _ = await running.result
        let stamps = sender.calls.compactMap { apsTimestamp(of: $0.request.body) }
        #expect(stamps.last == now + 10)
        #expect(sender.calls.last?.kind == "end")
        #expect(stamps == stamps.sorted())
        #expect(Set(stamps).count == stamps.count)
        #expect(stamps.count < 11)  // some were coalesced while the slow send was in flight
        #expect(sender.overlaps == 0)
        #expect(try await f.count(.superseded) == 11 - stamps.count)
    }

    @Test func gracefulShutdownLeavesNothingHeld() async throws {
        let f = try await OutboxFixture.make()
        defer { Task { await f.close() } }
        for a in 0..<30 { try await f.registerActivity(visit: "v-1", activity: "a-\(a)", token: token("a\(a)")) }
        let sender = RecordingSender(delaySeconds: 0.3)
        let worker = f.worker(sender)
        let running = Task { try await worker.run() }
        _ = try await f.enqueue(update("v-1", timestamp: now))
        while sender.calls.isEmpty { try await Task.sleep(nanoseconds: 10_000_000) }
        running.cancel()
        _ = await running.result
        #expect(try await f.count(.sending) == 0)
        #expect(try await f.count(.sent) + f.count(.pending) == 30)
    }
}
