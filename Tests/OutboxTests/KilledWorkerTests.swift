import APNs
import APNsSimulator
import Foundation
import Outbox
import Postgres
import Runtime
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The built `livevisits` binary (`swift build` puts it next to the tests).
private let livevisitsBinary = TestDatabase.repositoryRoot.appendingPathComponent(".build/debug/livevisits").path

/// `kill -9` of a real `livevisits worker` process mid-batch, then a survivor: every push still arrives
/// (at least once) and a push sent twice carries the same apns-id both times.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: livevisitsBinary), "build livevisits first (swift build)"))
struct KilledWorkerTests {
    @Test func killNineMidBatchStillDeliversEverythingAndDuplicatesShareTheirApnsId() async throws {
        let f = try await OutboxFixture.make()
        var simulatorConfiguration = SimulatorConfiguration()
        simulatorConfiguration.bundleID = "com.example.visits"
        let simulator = try APNsSimulator(configuration: simulatorConfiguration)
        let endpoint = try await simulator.start()
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("lv-key-\(UUID().uuidString).p8").path
        defer {
            try? FileManager.default.removeItem(atPath: keyFile)
            Task { await simulator.stop(); await f.close() }
        }
        let key = try await Subprocess.run(
            "/bin/sh", ["-c", "openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt > '\(keyFile)'"])
        #expect(key.status == 0)

        let count = 300
        let now = Int64(Date().timeIntervalSince1970)
        let registry = f.registry
        try await f.pool.withTransaction { connection in
            for a in 0..<count {
                try registry.registerLiveActivity(
                    visitId: "v-1", activityId: "a-\(a)", pushToken: token("k\(a)"), environment: .sandbox, on: connection)
            }
        }
        _ = try await f.enqueue(update("v-1", timestamp: now))
        simulator.inject(FaultSettings(latency: .init(milliseconds: 300)))

        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = f.url
        environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
        environment["LIVEVISITS_APNS_URL"] = endpoint.url
        environment["LIVEVISITS_APNS_CA_FILE"] = endpoint.caFile
        environment["LIVEVISITS_APNS_KEY_FILE"] = keyFile
        environment["LIVEVISITS_APNS_KEY_ID"] = "KEY1234567"
        environment["LIVEVISITS_APNS_TEAM_ID"] = "TEAM123456"
        environment["LIVEVISITS_APNS_BUNDLE_ID"] = "com.example.visits"
        environment["LIVEVISITS_LOG_LEVEL"] = "error"
        let child = try ChildProcess(livevisitsBinary, ["worker"], environment: environment).start()

        // Kill it while its batch is on the wire: some pushes arrived, others are leased and unanswered.
        let deadline = Date().addingTimeInterval(60)
        while simulator.deliveries().count < 20 && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        child.signal(SIGKILL)
        _ = await child.wait()
        let beforeKill = simulator.deliveries().count
        #expect(beforeKill >= 20)
        #expect(try await f.count(.sending) > 0)  // its leases are held by a dead process

        // A survivor takes over once the dead worker's leases (30 s) run out.
        simulator.clearFaults()
        let survivor = f.worker(APNsClient(configuration: try clientConfiguration(endpoint, keyFile: keyFile), metrics: Metrics()))
        let running = Task { try await survivor.run() }
        while try await f.count(.sent) < count {
            guard Date() < deadline.addingTimeInterval(60) else { break }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        running.cancel()
        _ = await running.result

        #expect(try await f.count(.sent) == count)
        let accepted = simulator.deliveries().filter { $0.status == 200 }
        let byToken = Dictionary(grouping: accepted, by: { $0.deviceToken ?? "" })
        #expect(byToken.count == count)
        for deliveries in byToken.values { #expect(Set(deliveries.map(\.apnsID)).count == 1) }
    }

    private func clientConfiguration(_ endpoint: SimulatorEndpoint, keyFile: String) throws -> APNsConfiguration {
        APNsConfiguration(
            baseURLs: [.sandbox: endpoint.url, .production: endpoint.url],
            trustedCertificates: try APNsTrustedCertificates(pem: Array(try Data(contentsOf: URL(fileURLWithPath: endpoint.caFile)))),
            signingKey: try APNsSigningKey(pem: Array(try Data(contentsOf: URL(fileURLWithPath: keyFile)))), keyId: "KEY1234567",
            teamId: "TEAM123456", bundleId: "com.example.visits", requestTimeout: 5)
    }
}
