import APNsSimulator
import Foundation
import JSON
import Runtime
import Synchronization
import TestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Real `livevisits serve --api-only` and `livevisits worker` processes (the binary `BuiltProduct` builds)
/// on one database, sending to the project's simulator in this test process with a fresh ES256 key.
final class Fleet: Sendable {
    let simulator: APNsSimulator
    let endpoint: SimulatorEndpoint
    let keyFile: String
    let binary: String
    let folder: URL
    private let started = Mutex<[RunningChild]>([])

    private init(simulator: APNsSimulator, endpoint: SimulatorEndpoint, keyFile: String, binary: String, folder: URL) {
        self.simulator = simulator
        self.endpoint = endpoint
        self.keyFile = keyFile
        self.binary = binary
        self.folder = folder
    }

    static let bundleID = "com.example.visits"

    /// Lends a prepared fleet to `body`; once `body` has returned or thrown, stops every child the fleet
    /// started or adopted (last started first, each waited for), then the simulator, and removes the folder.
    static func with<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (Fleet) async throws -> Result
    ) async throws -> Result {
        try await withResource({ try await prepare() }, close: { await $0.close() }, body)
    }

    /// Builds `livevisits`, starts the simulator and makes the signing key.
    private static func prepare() async throws -> Fleet {
        let binary = try await BuiltProduct.livevisits()
        var configuration = SimulatorConfiguration()
        configuration.bundleID = bundleID
        let simulator = try APNsSimulator(configuration: configuration)
        let endpoint = try await simulator.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lv-fleet-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let keyFile = folder.appendingPathComponent("key.p8").path
        do {
            try await SigningKeyFile.write(to: keyFile)
        } catch {
            await simulator.stop()
            throw error
        }
        return Fleet(simulator: simulator, endpoint: endpoint, keyFile: keyFile, binary: binary, folder: folder)
    }

    func environment(databaseURL: String) -> [String: String] {
        productEnvironment(
            databaseURL: databaseURL, apnsURL: endpoint.url, channelsURL: endpoint.channelsURL, caFile: endpoint.caFile,
            keyFile: keyFile, bundleID: Fleet.bundleID)
    }

    /// Starts `livevisits worker` (its output in the fleet's folder, for a failure's message).
    @discardableResult
    func startWorker(databaseURL: String, name: String, adding extra: [String: String] = [:]) throws -> RunningChild {
        adopt(
            try ChildProcess(binary, ["worker"], environment: environment(databaseURL: databaseURL).merging(extra) { $1 })
                .start(stdout: .file(log(name)), stderr: .file(log(name) + ".err")))
    }

    /// Takes `child` into the fleet: it is stopped with the fleet's other children when the fleet closes.
    @discardableResult
    func adopt(_ child: RunningChild) -> RunningChild {
        started.withLock { $0.append(child) }
        return child
    }

    /// The children started or adopted so far, in that order.
    var children: [RunningChild] { started.withLock { $0 } }

    /// Starts `livevisits serve --api-only` on a free loopback port and waits until `/readyz` answers 200.
    func startAPI(
        databaseURL: String, name: String, adding extra: [String: String] = [:]
    ) async throws -> (child: RunningChild, api: APIClient) {
        guard let port = LoopbackPort.bindable() else { throw Failure("no free loopback port") }
        var environment = environment(databaseURL: databaseURL).merging(extra) { $1 }
        environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:\(port)"
        let child = adopt(
            try ChildProcess(binary, ["serve", "--api-only"], environment: environment)
                .start(stdout: .file(log(name)), stderr: .file(log(name) + ".err")))
        let api = APIClient(baseURL: "http://127.0.0.1:\(port)")
        do {
            try await eventually("\(name) ready (/readyz 200)", within: 60, pollingEvery: 0.1) {
                guard child.isRunning else { throw Failure("\(name) exited: \(self.output(name))") }
                return (try? await api.send("GET", "/readyz").status) == 200
            }
        } catch {
            _ = await child.stop()
            throw error
        }
        return (child, api)
    }

    /// Starts `count` APIs named `api-0`, `api-1`, … (see `startAPI`) and returns their clients in that order.
    func startAPIs(_ count: Int, databaseURL: String) async throws -> [APIClient] {
        var apis: [APIClient] = []
        for n in 0..<count { apis.append(try await startAPI(databaseURL: databaseURL, name: "api-\(n)").api) }
        return apis
    }

    /// Runs `livevisits migrate` on `databaseURL`; throws with its stderr when it fails.
    func migrate(databaseURL: String) async throws {
        let migrated = try await ChildProcess(binary, ["migrate"], environment: environment(databaseURL: databaseURL)).run()
        guard migrated.status == 0 else { throw Failure("migrate: \(migrated.stderr)") }
    }

    /// Mints a dispatcher key with `livevisits keys create`.
    func dispatcherKey(databaseURL: String) async throws -> String {
        let outcome = try await ChildProcess(
            binary, ["keys", "create", "--role", "dispatcher"], environment: environment(databaseURL: databaseURL)
        ).run()
        guard outcome.status == 0, let key = outcome.stdout.split(separator: "\n").last else {
            throw Failure("keys create: \(outcome.stderr)")
        }
        return String(key)
    }

    func log(_ name: String) -> String { folder.appendingPathComponent("\(name).log").path }

    /// What a process wrote to stderr (the end of it).
    func output(_ name: String) -> String {
        String(((try? String(contentsOfFile: log(name) + ".err", encoding: .utf8)) ?? "").suffix(1500))
    }

    /// Stops the children (last started first, each waited for), then the simulator; removes the folder.
    private func close() async {
        for child in children.reversed() { _ = await child.stop() }
        await simulator.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// The public API as a client sees it: one request, its status and JSON answer.
struct APIClient: Sendable {
    let baseURL: String

    func send(
        _ method: String, _ path: String, key: String? = nil, body: JSONValue? = nil
    ) async throws -> (status: Int, json: JSONValue) {
        guard let url = URL(string: baseURL + path) else { throw Fleet.Failure("bad URL \(baseURL + path)") }
        var request = URLRequest(url: url, timeoutInterval: 30)
        request.httpMethod = method
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = Data(body.serialized())
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        return (status, (try? JSONValue.parse(data)) ?? .null)
    }
}

/// A hex token unique to `name`.
func token(_ name: String) -> String {
    var hex = ""
    for byte in Array(name.utf8) { hex += String(format: "%02x", byte) }
    while hex.count < 64 { hex += "0" }
    return String(hex.prefix(64))
}
