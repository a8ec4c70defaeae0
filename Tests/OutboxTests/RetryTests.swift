import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import Runtime
import Synchronization
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(5))) struct RetryTests {
    let now = Int64(Date().timeIntervalSince1970)

    @Test func retryableAnswersAreRetriedWithGrowingJitteredGapsAndTheSameApnsId() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let script: [RecordingSender.Answer] = [
                .fail(503, "ServiceUnavailable", .retryable), .fail(503, "ServiceUnavailable", .retryable),
                .fail(503, "ServiceUnavailable", .retryable), .fail(503, "ServiceUnavailable", .retryable),
                .fail(429, "TooManyRequests", .retryable), .fail(500, "InternalServerError", .retryable),
            ]
            let sender = RecordingSender { _, n in n < script.count ? script[n] : .ok }
            try await f.drain(f.worker(sender))
            #expect(sender.calls.count == 7)
            #expect(Set(sender.calls.map(\.request.apnsId)).count == 1)
            let delivery = try #require(try await f.store.list().first)
            #expect(delivery.state == .sent)
            let attempts = try await f.store.attempts(deliveryId: delivery.id)
            #expect(attempts.map(\.status) == [503, 503, 503, 503, 429, 500, 200])
            #expect(
                attempts.map(\.reason) == [
                    "ServiceUnavailable", "ServiceUnavailable", "ServiceUnavailable", "ServiceUnavailable",
                    "TooManyRequests", "InternalServerError", nil,
                ])
            try expectBackoffsHeld(attempts, f.configuration.backoff)
        }
    }

    @Test func pastTheMaximumAgeADeliveryIsDeadWithItsLastAnswer() async throws {
        var configuration = OutboxFixture.fastConfiguration
        configuration.maximumAgeSeconds = 0.2
        try await withOutboxFixture(configuration: configuration) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let sender = RecordingSender { _, _ in .fail(503, "ServiceUnavailable", .retryable) }
            try await f.drain(f.worker(sender))
            let dead = try #require(try await f.store.list(state: .dead).first)
            #expect(dead.lastStatus == 503 && dead.lastReason == "ServiceUnavailable")
            #expect(try await f.store.attempts(deliveryId: dead.id).count == sender.calls.count)
            // Operators requeue it as a new attempt with the same apns-id.
            let requeued = try await f.store.retry(id: dead.id)
            #expect(requeued.state == .pending && requeued.apnsId == dead.apnsId)
            // With a fresh maximum age, but still showing when it was first written.
            #expect(requeued.createdAt == dead.createdAt)
            let healthy = RecordingSender()
            try await f.drain(f.worker(healthy))
            #expect(healthy.calls.map(\.request.apnsId) == [dead.apnsId])
            await #expect(throws: OutboxError.self) { try await f.store.retry(id: dead.id) }
            await #expect(throws: OutboxError.self) { try await f.store.retry(id: 999_999) }
        }
    }

    @Test func aPermanentRefusalIsDeadAtOnce() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let sender = RecordingSender { _, _ in .fail(400, "PayloadTooLarge", .permanent) }
            try await f.drain(f.worker(sender))
            #expect(sender.calls.count == 1)
            #expect(try await f.store.list(state: .dead).first?.lastReason == "PayloadTooLarge")
        }
    }

    @Test func unregisteredRetiresTheTokenAndLaterUpdatesAreNotSent() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("gone"))
            try await f.registerActivity(visit: "v-1", activity: "a-2", token: token("alive"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let later = Int64((Date().timeIntervalSince1970 + 60) * 1000)
            let sender = RecordingSender { request, _ in
                request.deviceToken == token("gone")
                    ? .fail(410, "Unregistered", .tokenDead, timestamp: later) : .ok
            }
            let worker = f.worker(sender)
            try await f.drain(worker)
            #expect(try await f.count(.cancelled) == 1)
            let count = try await f.pool.withConnection { [registry = f.registry] in
                try registry.liveActivityCount(visitId: "v-1", on: $0)
            }
            #expect(count == 1)
            _ = try await f.enqueue(update("v-1", timestamp: now + 1), end("v-1", timestamp: now + 2))
            try await f.drain(worker)
            #expect(sender.calls.filter { $0.request.deviceToken == token("gone") }.count == 1)
            #expect(sender.calls.filter { $0.request.deviceToken == token("alive") }.count == 2)  // the end superseded the update
        }
    }

    @Test func aStale410DoesNotRetireATokenRegisteredAgainAfterIt() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let longAgo = Int64((Date().timeIntervalSince1970 - 3600) * 1000)
            let sender = RecordingSender { _, n in
                n == 0 ? .fail(410, "Unregistered", .tokenDead, timestamp: longAgo) : .ok
            }
            try await f.drain(f.worker(sender))
            #expect(sender.calls.count == 2)
            #expect(try await f.count(.sent) == 1)
            let count = try await f.pool.withConnection { [registry = f.registry] in
                try registry.liveActivityCount(visitId: "v-1", on: $0)
            }
            #expect(count == 1)
        }
    }

    @Test func badDeviceTokenRetiresAPushToStartToken() async throws {
        try await withOutboxFixture { f in
            try await f.registerStart(customer: "c-1", device: "d-1", token: token("s1"))
            _ = try await f.enqueue(start("v-1", timestamp: now))
            let sender = RecordingSender { _, _ in .fail(400, "BadDeviceToken", .tokenDead) }
            try await f.drain(f.worker(sender))
            #expect(try await f.count(.cancelled) == 1)
            #expect(try await f.enqueue(start("v-2", timestamp: now)).created == 0)
        }
    }

    @Test func badDeviceTokenCountsAnEnvironmentMixupAndNamesTheTokenOnlyByItsHash() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("sandbox-1"), environment: .sandbox)
            try await f.registerActivity(visit: "v-1", activity: "a-2", token: token("sandbox-2"), environment: .sandbox)
            try await f.registerActivity(visit: "v-1", activity: "a-3", token: token("prod-1"), environment: .production)
            try await f.registerActivity(visit: "v-1", activity: "a-4", token: token("fine"), environment: .production)
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let sender = RecordingSender { request, _ in
                request.deviceToken == token("fine") ? .ok : .fail(400, "BadDeviceToken", .tokenDead)
            }
            let metrics = Metrics()
            let log = LogLines()
            try await f.drain(f.worker(sender, metrics: metrics, logger: log.logger))
            #expect(try await f.count(.cancelled) == 3)
            let name = "livevisits_apns_environment_mixups_total"
            #expect(metrics.value(name, labels: ["environment": "sandbox"]) == 2)
            #expect(metrics.value(name, labels: ["environment": "production"]) == 1)
            #expect(await metrics.render().contains("\(name){environment=\"sandbox\"} 2"))
            let warnings = log.all.filter { $0.contains(" warning ") && $0.contains("BadDeviceToken") }
            #expect(warnings.count == 3)
            let prod = try #require(warnings.first { $0.contains("apns.environment=production") })
            #expect(prod.contains("apns.token=\(Logger.fingerprint(token("prod-1")))"))
            for line in log.all {
                for t in ["sandbox-1", "sandbox-2", "prod-1", "fine"] { #expect(!line.contains(token(t))) }
            }
        }
    }

    /// Contract §5: DeviceTokenNotForTopic retires the token, "but many in a short time mean our topic is
    /// wrong". Past the threshold the rest of the batch is a configuration error: tokens kept, deliveries
    /// pending, the alert raised, a success in the same batch not lifting the pause, and the pause shared
    /// with every worker through the database.
    @Test func manyNotForTopicPauseSendingAndKeepTheRestOfTheTokens() async throws {
        let t0 = 1_790_000_000.0
        let clock = ManualClock(now: t0)
        var configuration = OutboxFixture.fastConfiguration
        configuration.topicAlertThreshold = 3
        configuration.configurationPauseSeconds = 30
        configuration.maximumConcurrentSends = 1  // answers in claim order: the success comes last
        try await withOutboxFixture(clock: clock, configuration: configuration) { f in
            for a in 0..<10 { try await f.registerActivity(visit: "v-1", activity: "a-\(a)", token: token("wrong\(a)")) }
            try await f.registerActivity(visit: "v-2", activity: "a-ok", token: token("fine"))
            _ = try await f.enqueue(update("v-1", timestamp: Int64(t0)))
            _ = try await f.enqueue(update("v-2", timestamp: Int64(t0)))
            let topicWrong = Mutex(true)
            let sender = RecordingSender { request, _ in
                request.deviceToken != token("fine") && topicWrong.withLock { $0 }
                    ? .fail(400, "DeviceTokenNotForTopic", .tokenDead) : .ok
            }
            let metrics = Metrics()
            let worker = f.worker(sender, metrics: metrics)
            #expect(try await worker.runOnce() == 11)
            #expect(sender.calls.last?.request.deviceToken == token("fine"))

            // The first two retired their tokens; from the third on the topic looks wrong: tokens kept.
            #expect(try await f.count(.cancelled) == 2)
            #expect(try await f.count(.pending) == 8)
            #expect(try await f.count(.sent) == 1)
            let live = try await f.pool.withConnection { [registry = f.registry] in
                try registry.liveActivityCount(visitId: "v-1", on: $0)
            }
            #expect(live == 8)
            #expect(metrics.value("livevisits_outbox_config_alert") == 1)  // not lowered by the batch's success
            #expect(metrics.value("livevisits_outbox_tokens_retired_total", labels: ["reason": "DeviceTokenNotForTopic"]) == 2)

            // Paused for every worker on the database, this one and a fresh one alike, even for a push that
            // is due now.
            try await f.registerActivity(visit: "v-3", activity: "a-new", token: token("new"))
            _ = try await f.enqueue(update("v-3", timestamp: Int64(t0)))
            let other = f.worker(sender)
            #expect(try await other.runOnce() == 0)
            clock.advance(by: 29)
            #expect(try await worker.runOnce() == 0)
            #expect(try await other.runOnce() == 0)
            #expect(sender.calls.count == 11)

            // The topic fixed, the kept deliveries go after the pause, to the tokens that were kept.
            topicWrong.withLock { $0 = false }
            clock.advance(by: 2)
            #expect(try await other.runOnce() == 9)
            #expect(try await f.count(.sent) == 10)
            #expect(try await f.count(.dead) == 0)
            #expect(Set(sender.accepted.dropFirst().map(\.request.deviceToken)).count == 9)
        }
    }

    @Test func configurationErrorsPauseSendingInsteadOfBurningRetries() async throws {
        // The worker's own clock: the pause lasts until the test moves time on, however slow the machine.
        let clock = ManualClock(now: Date().timeIntervalSince1970)
        var configuration = OutboxFixture.fastConfiguration
        configuration.maximumAgeSeconds = 0.1
        configuration.configurationPauseSeconds = 0.3
        try await withOutboxFixture(clock: clock, configuration: configuration) { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            _ = try await f.enqueue(update("v-1", timestamp: now))
            let id = try #require(try await f.store.list().first?.id)
            let sender = RecordingSender { _, n in
                n < 2 ? .fail(403, "InvalidProviderToken", .configuration) : .ok
            }
            let metrics = Metrics()
            let worker = f.worker(sender, metrics: metrics)
            try await withRunning({ try await worker.run() }) { running in
                try await eventually("the first attempt recorded") { try await !f.store.attempts(deliveryId: id).isEmpty }
                #expect(metrics.value("livevisits_outbox_config_alert") == 1)
                #expect(try await f.count(.pending) == 1)
                for _ in 0..<5 { worker.wake() }
                // A claim now, while the manual clock stands inside the pause, takes nothing: no retry burnt.
                #expect(try await worker.runOnce() == 0)
                #expect(sender.calls.count == 1)
                // Past the pause (and the delivery's maximum age): retried, paused again (doubled), then sent. The
                // clock stands still while a send is in flight: moved on, it would outrun the 5 s lease on a slow
                // machine, and the lease's reclaim (a second send, by design) is not what this test is about.
                try await eventually(
                    "sent once the pauses are over", pollingEvery: 0.02,
                    between: {
                        if try await f.count(.sending) == 0 { clock.advance(by: 1) }
                        worker.wake()
                    }
                ) { try await f.count(.sent) > 0 }
                running.cancel()
                _ = await running.result
                #expect(sender.calls.count == 3)
                #expect(try await f.count(.dead) == 0)  // past its maximum age, but configuration errors do not age it out
                #expect(metrics.value("livevisits_outbox_config_alert") == 0)
            }
        }
    }
}
