import APNs
import APNsSimulator
import Foundation
import Outbox
import OutboxAPNs
import PersonalData
import Runtime
import TestSupport
import Testing

/// Token registration through HTTP, delivered for real: the outbox worker and the APNs client run
/// in-process against the APNs simulator (HTTP/2 over TLS, ES256 provider tokens).
@Suite(.serialized, .timeLimit(.minutes(5))) struct SimulatorDeliveryTests {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let bundleID = "com.example.visits"

    /// A fresh P-256 key as a PKCS#8 PEM (what a `.p8` file holds).
    static func signingKeyPEM() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("api-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let sec1 = dir.appendingPathComponent("sec1.pem").path
        let p8 = dir.appendingPathComponent("key.p8").path
        let generated = try Subprocess.runBlocking(
            "/usr/bin/openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", sec1])
        let converted = try Subprocess.runBlocking("/usr/bin/openssl", ["pkcs8", "-topk8", "-nocrypt", "-in", sec1, "-out", p8])
        guard generated.status == 0, converted.status == 0 else {
            throw RawHTTPError(description: "openssl: \(generated.stderr) \(converted.stderr)")
        }
        return try String(contentsOfFile: p8, encoding: .utf8)
    }

    /// The API, an outbox worker and the APNs client against a fresh simulator, all on `clock`.
    struct Harness {
        let simulator: APNsSimulator
        let client: APNsClient
        let api: APIServer
        let worker: OutboxWorker

        static func start(clock: any WallClock = SystemClock()) async throws -> Harness {
            let pem = try SimulatorDeliveryTests.signingKeyPEM()
            var settings = SimulatorConfiguration()
            settings.providerKeys = [ProviderKey(teamID: teamID, keyID: keyID, publicKeyPEM: pem)]
            settings.bundleID = bundleID
            settings.logger = Logger(label: "apns-sim-test")
            let simulator = try APNsSimulator(configuration: settings)
            let endpoint = try await simulator.start()
            let apns = APNsConfiguration(
                baseURLs: [.sandbox: endpoint.sandboxURL, .production: endpoint.url],
                trustedCertificates: try APNsTrustedCertificates(contentsOfFile: endpoint.caFile),
                signingKey: try APNsSigningKey(pem: Array(pem.utf8)), keyId: keyID, teamId: teamID, bundleId: bundleID)
            let client = APNsClient(configuration: apns, metrics: Metrics())
            let api = try await APIServer.start(clock: clock)
            // As `livevisits serve` wires it: the sealed personal fields of a start are opened at send time.
            let sender = SealedPushSender(
                inner: APNsPushSender(client: client), keys: api.environment.personalData, pool: api.pool,
                cache: api.environment.dataKeyCache)
            let worker = OutboxWorker(pool: api.pool, sender: sender, clock: clock, metrics: Metrics())
            return Harness(simulator: simulator, client: client, api: api, worker: worker)
        }

        func delivered(to token: String) -> [SimulatedDelivery] {
            simulator.deliveries().filter { $0.deviceToken?.lowercased() == token }
        }

        /// Runs the worker until `token` got something; throws when it never does.
        func drain(until token: String) async throws {
            try await eventually("a push to \(token.prefix(8))… at the simulator", pollingEvery: 0.025) {
                _ = try await worker.runOnce()
                return !delivered(to: token).isEmpty
            }
        }

        func stop() async {
            await client.shutdown()
            await api.stop()
            await simulator.stop()
        }

        /// Lends a started harness (see `start`) to `body` and stops it once `body` has returned or thrown.
        static func with<Result>(
            clock: any WallClock = SystemClock(), _ body: (Harness) async throws -> Result
        ) async throws -> Result {
            try await withResource({ try await start(clock: clock) }, close: { await $0.stop() }, body)
        }
    }

    @Test func catchUpAndLateStartLandInTheSimulator() async throws {
        try await Harness.with { harness in
            let api = harness.api
            let worker = harness.worker
            func delivered(to token: String) -> [SimulatedDelivery] { harness.delivered(to: token) }
            func drain(until token: String) async throws { try await harness.drain(until: token) }

            let id = uniqueID("sim")
            try await api.schedule(id, customer: "c-1")
            try await api.post(id, #"{"type":"enRoute","kilometresAway":7}"#)
            let customer = try await api.key(.customer, "c-1")
            let behind = pushToken("sim-behind")
            let level = pushToken("sim-level")
            let starter = pushToken("sim-start")

            // Equal version first: nothing for it; then an older version: a catch-up update at once.
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-level", key: customer,
                    json: "{\"pushToken\":\"\(level)\",\"environment\":\"sandbox\",\"version\":2}"
                ).status == 204)
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-behind", key: customer,
                    json: "{\"pushToken\":\"\(behind)\",\"environment\":\"sandbox\",\"version\":1}"
                ).status == 204)
            try await drain(until: behind)
            let catchUp = try #require(delivered(to: behind).first)
            #expect(catchUp.status == 200)
            #expect(catchUp.aps?["event"]?.stringValue == "update")
            #expect(catchUp.aps?["content-state"]?["status"]?.stringValue == "enRoute")
            #expect(catchUp.header("apns-push-type") == "liveactivity")
            for _ in 0..<5 { _ = try await worker.runOnce() }
            #expect(delivered(to: level).isEmpty)

            // A push-to-start token registered after scheduling: the start, on another visit with no activity.
            let quiet = uniqueID("sim")
            try await api.schedule(quiet, customer: "c-1")
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/c-1/push-to-start-tokens/d-1", key: customer,
                    json: "{\"pushToken\":\"\(starter)\",\"environment\":\"production\"}"
                ).status == 204)
            try await drain(until: starter)
            let start = try #require(delivered(to: starter).first)
            #expect(start.aps?["event"]?.stringValue == "start")
            #expect(start.aps?["attributes"]?["visitId"]?.stringValue == quiet)
            #expect(start.aps?["attributes"]?["customerFirstName"]?.stringValue == "Alex", "opened at send time")
            #expect(start.aps?["attributes"]?["serviceAddress"]?.stringValue == "12 Elm Row")
            #expect(delivered(to: starter).allSatisfy { $0.aps?["attributes"]?["visitId"]?.stringValue != id })

        }
    }

    /// Contract §10: what is still queued for a customer when they are erased is never sent.
    @Test func pushesQueuedForAnErasedCustomerAreNotSent() async throws {
        try await Harness.with { harness in
            let api = harness.api
            let customer = uniqueID("c")
            let id = uniqueID("sim")
            try await api.schedule(id, customer: customer)
            let customerKey = try await api.key(.customer, customer)
            let token = pushToken("erased-\(id)")
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-1", key: customerKey,
                    json: "{\"pushToken\":\"\(token)\",\"environment\":\"sandbox\"}"
                ).status == 204)
            try await api.post(id, #"{"type":"onSite"}"#)
            try await api.post(id, #"{"type":"completed"}"#)
            #expect(try await api.call("DELETE", "/v1/customers/\(customer)", key: api.ops).status == 204)
            for _ in 0..<5 { _ = try await harness.worker.runOnce() }
            #expect(harness.delivered(to: token).isEmpty, "nothing queued before the erasure went out")
            let states = try await api.pool.withConnection { c in
                try c.query("SELECT DISTINCT state FROM deliveries WHERE visit_id = \(id)").rows.map { try $0.string("state") }
            }
            #expect(states.contains("cancelled"), "\(states)")
            #expect(states.allSatisfy { $0 == "cancelled" || $0 == "superseded" }, "none pending, sending or sent: \(states)")
        }
    }

    /// Contract §6: a registration behind the visit pushes the latest state at once, even when that
    /// state went stale before the activity registered (its catch-up is not expired by its stale date).
    @Test func aCatchUpAfterTheStaleDateIsStillDelivered() async throws {
        let t0 = Date().timeIntervalSince1970.rounded(.down)
        let clock = ManualClock(now: t0)
        try await Harness.with(clock: clock) { harness in
            let api = harness.api
            let id = uniqueID("sim")
            try await api.schedule(id, customer: "c-1")
            let enRoute = try await api.post(id, #"{"type":"enRoute","kilometresAway":7}"#)
            let staleDate = try #require(enRoute.json?["staleDate"] as? Int)
            #expect(staleDate == Int(t0) + 120)
            clock.advance(by: 600)  // the enRoute state went stale 8 minutes ago

            let customer = try await api.key(.customer, "c-1")
            let late = pushToken("sim-late")
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-late", key: customer,
                    json: "{\"pushToken\":\"\(late)\",\"environment\":\"sandbox\",\"version\":1}"
                ).status == 204)
            try await harness.drain(until: late)
            let catchUp = try #require(harness.delivered(to: late).first)
            #expect(catchUp.status == 200)
            #expect(catchUp.aps?["event"]?.stringValue == "update")
            #expect(catchUp.aps?["content-state"]?["status"]?.stringValue == "enRoute")
            #expect(catchUp.aps?["stale-date"]?.integerValue == Int64(staleDate))  // the state's own, unchanged
            #expect(catchUp.header("apns-expiration") == String(Int(t0) + 600))  // at once, not in the past
            let states = try await api.pool.withConnection { c in
                try c.query("SELECT state FROM deliveries WHERE visit_id = \(id) AND activity_id = 'a-late'").map {
                    try $0.string("state")
                }
            }
            #expect(states == ["sent"])
        }
    }
}
