import APNsSimulator
import Foundation
import OutboxTestSupport
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

    /// Lends a prepared rig to `body` and stops it once `body` has returned or thrown.
    static func with<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (WorkerProcess) async throws -> Result
    ) async throws -> Result {
        try await withResource({ try await prepare() }, close: { await $0.stop() }, body)
    }

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
        let environment = productEnvironment(
            databaseURL: databaseURL, apnsURL: endpoint.url, channelsURL: endpoint.channelsURL, caFile: endpoint.caFile,
            keyFile: keyFile, bundleID: "com.example.visits")
        return try ChildProcess(binary, ["worker"], environment: environment).start()
    }

    func stop() async {
        try? FileManager.default.removeItem(atPath: keyFile)
        await simulator.stop()
    }
}
