import APNsSimulator
import Foundation
import Runtime
import TestSupport

/// A real `livevisits worker` process against the project's simulator (in this test process) and a
/// fixture's database, with a fresh ES256 signing key: for the tests that kill or stop a worker.
struct WorkerProcess {
    let simulator: APNsSimulator
    let endpoint: SimulatorEndpoint
    let keyFile: String
    /// `livevisits`, built from the current sources (`BuiltProduct`).
    let binary: String

    /// Builds `livevisits`, starts the simulator and makes the key.
    static func prepare() async throws -> WorkerProcess {
        let binary = try await BuiltProduct.livevisits()
        var configuration = SimulatorConfiguration()
        configuration.bundleID = "com.example.visits"
        let simulator = try APNsSimulator(configuration: configuration)
        let endpoint = try await simulator.start()
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("lv-key-\(UUID().uuidString).p8").path
        do {
            try await SigningKeyFile.write(to: keyFile)
        } catch {
            await simulator.stop()
            throw error
        }
        return WorkerProcess(simulator: simulator, endpoint: endpoint, keyFile: keyFile, binary: binary)
    }

    /// Starts `livevisits worker` on `databaseURL`, sending to the simulator (output discarded).
    func start(databaseURL: String) throws -> RunningChild {
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = databaseURL
        environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
        environment["LIVEVISITS_APNS_URL"] = endpoint.url
        environment["LIVEVISITS_APNS_CHANNELS_URL"] = endpoint.channelsURL
        environment["LIVEVISITS_APNS_CA_FILE"] = endpoint.caFile
        environment["LIVEVISITS_APNS_KEY_FILE"] = keyFile
        environment["LIVEVISITS_APNS_KEY_ID"] = "KEY1234567"
        environment["LIVEVISITS_APNS_TEAM_ID"] = "TEAM123456"
        environment["LIVEVISITS_APNS_BUNDLE_ID"] = "com.example.visits"
        environment["LIVEVISITS_LOG_LEVEL"] = "error"
        return try ChildProcess(binary, ["worker"], environment: environment).start()
    }

    func stop() async {
        try? FileManager.default.removeItem(atPath: keyFile)
        await simulator.stop()
    }
}
