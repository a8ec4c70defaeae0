import APNs
import APNsSimulator
import Foundation
import Outbox
import OutboxAPNs
import OutboxTestSupport
import Postgres
import Runtime
import TestSupport
import Testing

/// The outbox through the real APNs client and the project's simulator (HTTP/2 over TLS on loopback).
@Suite(.timeLimit(.minutes(5))) struct SimulatorWireTests {
    let now = Int64(Date().timeIntervalSince1970)

    /// A running simulator and a client that trusts it.
    struct Wire {
        let simulator: APNsSimulator
        let client: APNsClient
        var sender: APNsPushSender { APNsPushSender(client: client) }

        static func start(requestTimeout: Double = 5) async throws -> Wire {
            var configuration = SimulatorConfiguration()
            configuration.bundleID = "com.example.visits"
            let simulator = try APNsSimulator(configuration: configuration)
            let endpoint = try await simulator.start()
            let key = try await Subprocess.run(
                "/bin/sh", ["-c", "openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt"])
            let apns = APNsConfiguration(
                baseURLs: [.sandbox: endpoint.url, .production: endpoint.url],
                trustedCertificates: try APNsTrustedCertificates(
                    pem: Array(try Data(contentsOf: URL(fileURLWithPath: endpoint.caFile)))),
                signingKey: try APNsSigningKey(pem: Array(key.stdout.utf8)), keyId: "KEY1234567", teamId: "TEAM123456",
                bundleId: "com.example.visits", requestTimeout: requestTimeout)
            return Wire(simulator: simulator, client: APNsClient(configuration: apns, metrics: Metrics()))
        }

        func stop() async {
            await client.shutdown()
            await simulator.stop()
        }

        /// Lends a started wire to `body` and stops it once `body` has returned or thrown.
        static func with<Result>(
            requestTimeout: Double = 5, isolation: isolated (any Actor)? = #isolation,
            _ body: (Wire) async throws -> Result
        ) async throws -> Result {
            try await withResource({ try await start(requestTimeout: requestTimeout) }, close: { await $0.stop() }, body)
        }
    }

    @Test func retriesThrough503x4Then429Then500AreDeliveredWithOneApnsIdAndGrowingGaps() async throws {
        try await withOutboxFixture { f in
            try await Wire.with { wire in
                try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
                _ = try await f.enqueue(update("v-1", timestamp: now))
                let worker = f.worker(wire.sender)
                let faults: [(count: Int, status: Int, reason: String)] = [
                    (4, 503, "ServiceUnavailable"), (1, 429, "TooManyRequests"), (1, 500, "InternalServerError"),
                ]
                var seen = 0
                for fault in faults {
                    wire.simulator.failNext(fault.count, status: fault.status, reason: fault.reason)
                    seen += fault.count
                    try await eventually(
                        "\(seen) requests at the simulator", pollingEvery: 0.005, between: { _ = try await worker.runOnce() }
                    ) { wire.simulator.deliveries().count >= seen }
                }
                try await f.drain(worker)
                let received = wire.simulator.deliveries()
                #expect(received.map(\.status) == [503, 503, 503, 503, 429, 500, 200])
                #expect(Set(received.map(\.apnsID)).count == 1)
                let last = try #require(received.last)
                #expect(last.header("apns-push-type") == "liveactivity")
                #expect(last.header("apns-topic") == "com.example.visits.push-type.liveactivity")
                #expect(last.header("apns-priority") == "5")
                #expect(last.header("apns-expiration") == String(now + 7200))
                #expect(last.deviceToken == token("a1"))
                #expect(last.providerToken != nil)
                let delivery = try #require(try await f.store.list().first)
                #expect(delivery.state == .sent && delivery.apnsId == last.apnsID)
                let attempts = try await f.store.attempts(deliveryId: delivery.id)
                #expect(attempts.map(\.status) == [503, 503, 503, 503, 429, 500, 200])
                try expectBackoffsHeld(attempts, f.configuration.backoff)
            }
        }
    }

    @Test func unregisteredRetiresTheTokenAndLaterUpdatesAreNotSent() async throws {
        try await withOutboxFixture { f in
            try await Wire.with { wire in
                try await f.registerActivity(visit: "v-1", activity: "gone", token: token("gone"))
                try await f.registerActivity(visit: "v-1", activity: "alive", token: token("alive"))
                wire.simulator.markUnregistered(
                    token: token("gone"), timestamp: Int64((Date().timeIntervalSince1970 + 60) * 1000))
                let worker = f.worker(wire.sender)
                _ = try await f.enqueue(update("v-1", timestamp: now))
                try await f.drain(worker)
                _ = try await f.enqueue(update("v-1", timestamp: now + 1))
                try await f.drain(worker)
                _ = try await f.enqueue(end("v-1", timestamp: now + 2))
                try await f.drain(worker)
                let received = wire.simulator.deliveries()
                #expect(received.filter { $0.deviceToken == token("gone") }.map(\.status) == [410])
                #expect(received.filter { $0.deviceToken == token("alive") }.map(\.status) == [200, 200, 200])
                #expect(try await f.count(.cancelled) == 1)
            }
        }
    }

    /// The first update is held at the simulator (a long latency for that one request) while nine more
    /// and the end are enqueued; the test checks that they were, so only the first and the end go out.
    @Test func coalescingWhileAPNsIsSlowSendsTheLastStateAndTheEndInOrder() async throws {
        try await withOutboxFixture { f in
            try await Wire.with(requestTimeout: 60) { wire in
                try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
                wire.simulator.addLatency(seconds: 5, count: 1)
                let worker = f.worker(wire.sender)
                try await withRunning({ try await worker.run() }) { running in
                    _ = try await f.enqueue(update("v-1", timestamp: now))
                    try await eventually("the first update at the simulator") { wire.simulator.statistics().requestsTotal == 1 }
                    for i in 1..<10 { _ = try await f.enqueue(update("v-1", timestamp: now + Int64(i))) }
                    _ = try await f.enqueue(end("v-1", timestamp: now + 10))
                    // The race this test is about happened: all of that while the first was still unanswered.
                    let sending = try await f.count(.sending)
                    let sent = try await f.count(.sent)
                    #expect(sending == 1 && sent == 0, "the first push was answered too early")
                    #expect(try await f.count(.superseded) == 9)
                    try await eventually("every delivery finished", pollingEvery: 0.05) {
                        try await f.count(.pending) + f.count(.sending) == 0
                    }
                    running.cancel()
                    _ = await running.result
                    let stamps = wire.simulator.deliveries().compactMap { d -> Int64? in
                        guard case .number(let ts)? = d.aps?["timestamp"] else { return nil }
                        return Int64(ts)
                    }
                    #expect(stamps == [now, now + 10])
                    #expect(wire.simulator.deliveries().allSatisfy { $0.status == 200 })
                }
            }
        }
    }

    @Test func threeWorkersDeliverTwoThousandThroughTheSimulatorWithoutDuplicates() async throws {
        try await withOutboxFixture { f in
            try await Wire.with { wire in
                let registry = f.registry
                try await f.pool.withTransaction { connection in
                    for v in 0..<400 {
                        for a in 0..<5 {
                            try registry.registerLiveActivity(
                                visitId: "v-\(v)", activityId: "a-\(a)", pushToken: token("v\(v)a\(a)"), environment: .sandbox,
                                on: connection)
                        }
                    }
                }
                var configuration = f.configuration
                configuration.batchSize = 100
                let workers = (0..<3).map { _ in f.worker(wire.sender, configuration: configuration) }
                let running = Task {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for w in workers { group.addTask { try await w.run() } }
                        try await group.waitForAll()
                    }
                }
                for v in 0..<400 { _ = try await f.enqueue(update("v-\(v)", timestamp: now)) }
                try await eventually(
                    "all 2000 pushes sent", within: 180, pollingEvery: 0.05, between: { for w in workers { w.wakeUp.signal() } }
                ) { try await f.count(.sent) >= 2000 }
                running.cancel()
                _ = await running.result
                let received = wire.simulator.deliveries()
                #expect(received.count == 2000)
                #expect(Set(received.map(\.apnsID)).count == 2000)
                #expect(Set(received.compactMap(\.deviceToken)).count == 2000)
            }
        }
    }
}
