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

#if canImport(Glibc)
    import Glibc
#endif

/// `kill -9` of a real `livevisits worker` process mid-batch, then a survivor: every push still arrives
/// (at least once) and a push sent twice carries the same apns-id both times.
@Suite(.timeLimit(.minutes(5))) struct KilledWorkerTests {
    @Test func killNineMidBatchStillDeliversEverythingAndDuplicatesShareTheirApnsId() async throws {
        try await withOutboxFixture { f in
            try await WorkerProcess.with { rig in
                let (simulator, endpoint, keyFile) = (rig.simulator, rig.endpoint, rig.keyFile)

                let count = 300
                let now = Int64(Date().timeIntervalSince1970)
                let registry = f.registry
                try await f.pool.withTransaction { connection in
                    for a in 0..<count {
                        try registry.registerLiveActivity(
                            visitId: "v-1", activityId: "a-\(a)", pushToken: token("k\(a)"), environment: .sandbox, on: connection
                        )
                    }
                }
                _ = try await f.enqueue(update("v-1", timestamp: now))
                simulator.inject(FaultSettings(latency: .init(milliseconds: 300)))

                let child = try rig.start(databaseURL: f.url)

                // Kill it while its batch is on the wire: some pushes arrived, others are leased and unanswered.
                do {
                    try await eventually("20 pushes at the simulator from the worker process", pollingEvery: 0.02) {
                        simulator.deliveries().count >= 20
                    }
                } catch {
                    child.signal(SIGKILL)
                    throw error
                }
                child.signal(SIGKILL)
                _ = await child.wait()
                let beforeKill = simulator.deliveries().count
                #expect(beforeKill >= 20)
                #expect(try await f.count(.sending) > 0)  // its leases are held by a dead process

                // A survivor takes over once the dead worker's leases (30 s) run out.
                simulator.clearFaults()
                let survivor = f.worker(
                    APNsPushSender(
                        client: APNsClient(configuration: try clientConfiguration(endpoint, keyFile: keyFile), metrics: Metrics())
                    ))
                try await withRunning({ try await survivor.run() }) { running in
                    try await eventually("all \(count) sent by the survivor", within: 120, pollingEvery: 0.1) {
                        try await f.count(.sent) >= count
                    }
                    running.cancel()
                    _ = await running.result

                    #expect(try await f.count(.sent) == count)
                    let accepted = simulator.deliveries().filter { $0.status == 200 }
                    let byToken = Dictionary(grouping: accepted, by: { $0.deviceToken ?? "" })
                    #expect(byToken.count == count)
                    for deliveries in byToken.values { #expect(Set(deliveries.map(\.apnsID)).count == 1) }
                }
            }
        }
    }

    private func clientConfiguration(_ endpoint: SimulatorEndpoint, keyFile: String) throws -> APNsConfiguration {
        APNsConfiguration(
            baseURLs: [.sandbox: endpoint.url, .production: endpoint.url],
            trustedCertificates: try APNsTrustedCertificates(
                pem: Array(try Data(contentsOf: URL(fileURLWithPath: endpoint.caFile)))),
            signingKey: try APNsSigningKey(pem: Array(try Data(contentsOf: URL(fileURLWithPath: keyFile)))), keyId: "KEY1234567",
            teamId: "TEAM123456", bundleId: "com.example.visits", requestTimeout: 5)
    }
}
