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

/// `kill -9` of a real `livevisits worker` process mid-batch, then a survivor: every push still arrives
/// (at least once) and a push sent twice carries the same apns-id both times.
/// (`WorkerProcess` builds the binary when the test run did not, so the test never skips.)
@Suite struct KilledWorkerTests {
    @Test func killNineMidBatchStillDeliversEverythingAndDuplicatesShareTheirApnsId() async throws {
        let f = try await OutboxFixture.make()
        let rig = try await WorkerProcess.prepare()
        defer { Task { await rig.stop(); await f.close() } }
        let (simulator, endpoint, keyFile) = (rig.simulator, rig.endpoint, rig.keyFile)

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

        let child = try rig.start(databaseURL: f.url)

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
