import APNs
import APNsSimulator
import Foundation
import Outbox
import OutboxAPNs
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
        let pid = try spawn(livevisitsBinary, ["worker"], environment: environment)

        // Kill it while its batch is on the wire: some pushes arrived, others are leased and unanswered.
        let deadline = Date().addingTimeInterval(60)
        while simulator.deliveries().count < 20 && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        kill(pid, SIGKILL)
        _ = try await onOwnThread { () -> Int32 in
            var status: Int32 = 0
            return waitpid(pid, &status, 0)
        }
        let beforeKill = simulator.deliveries().count
        #expect(beforeKill >= 20)
        #expect(try await f.count(.sending) > 0)  // its leases are held by a dead process

        // A survivor takes over once the dead worker's leases (30 s) run out.
        simulator.clearFaults()
        let survivor = f.worker(APNsPushSender(client: APNsClient(configuration: try clientConfiguration(endpoint, keyFile: keyFile), metrics: Metrics())))
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

    /// Starts a process in the background (output discarded) and returns its pid.
    private func spawn(_ path: String, _ arguments: [String], environment: [String: String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard rc == 0 else { throw OutboxError(code: .invalidIntent, message: "cannot start \(path): errno \(rc)") }
        return pid
    }
}
