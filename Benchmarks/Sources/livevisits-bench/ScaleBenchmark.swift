import APIStores
import APNsSimulator
import Foundation
import HTTPAPI
import JSON
import Postgres
import Runtime
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `livevisits-bench scale [--processes 1,2,3] [--visits N] [--switches N]`: end to end (POST → APNs
/// acknowledgement) with N `serve --api-only` and N `worker` processes on one scratch database, for each N:
/// events/s from the first POST to the last `end` acknowledged, and PostgreSQL's CPU per event and per push.
/// Then the failover: `--switches` times a fresh `scripts/pg-replica` pair, one API and one worker on its
/// multi-host URL, four clients posting, `failover`; per switch the seconds clients saw no primary (first
/// 503 to the next 201) and the events answered 201 that the promoted primary lacks.
struct ScaleBenchmark {
    static let summary = "N API + N worker processes end to end, and the 503 window of a failover"
    var processes = [1, 2, 3]
    var visits = 500
    var switches = 5

    static let syntax = CommandSyntax(
        command: "livevisits-bench scale", summary: summary,
        options: [
            .value("--processes", "LIST", "API and worker processes per measurement (default 1,2,3)"),
            .value(
                "--visits", "N",
                "visits per measurement: booked untimed, then 4 status events each, timed to the last end (default 500)"),
            .value("--switches", "N", "failovers to measure, 0 for none (default 5)"),
        ],
        details:
            "Needs LIVEVISITS_DATABASE_URL (the scripts/pg cluster), openssl, a built livevisits next to this binary; run from the repository root (scripts/pg-replica)."
    )

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        processes = try parsed.integers("--processes", in: 1...16) ?? processes
        visits = try parsed.integer("--visits", in: 1...Int.max) ?? visits
        switches = try parsed.integer("--switches", in: 0...100) ?? switches
    }

    func run() async throws {
        let serverURL = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let executable = try BenchmarkEnvironment.livevisits()
        let rig = try await Rig.start(root: root, livevisits: executable.path)
        defer { Task { await rig.stop() } }

        print("processes  events  pushes  seconds  events/s  pushes/s  PostgreSQL CPU µs/event  µs/push")
        for n in processes {
            let database = try await ScratchDatabase.create(
                serverURL: serverURL, migrations: root.appendingPathComponent("Migrations"))
            let f: Figures
            do {
                f = try await measure(processes: n, databaseURL: database.url, rig: rig)
                await database.drop()
            } catch {
                await database.drop()
                throw error
            }
            print(
                String(
                    format: "%d + %d      %6d  %6d  %7.1f  %8.0f  %8.0f  %23.0f  %7.0f", n, n, f.events, f.pushes, f.seconds,
                    Double(f.events) / f.seconds, Double(f.pushes) / f.seconds, f.postgresCPU / Double(f.events) * 1e6,
                    f.postgresCPU / Double(f.pushes) * 1e6))
        }

        guard switches > 0 else { return }
        print("")
        print("switch  503 window s  events answered 201  lost")
        var windows: [Double] = []
        var lostTotal = 0
        for s in 1...switches {
            let (window, answered, lost) = try await failover(root: root, rig: rig)
            windows.append(window)
            lostTotal += lost
            print(String(format: "%6d  %12.2f  %19d  %4d", s, window, answered, lost))
        }
        let sorted = windows.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
        print(
            String(
                format: "503 window p50 %.2f s, p99 %.2f s over %d switches; events lost %d", percentile(0.5), percentile(0.99),
                switches, lostTotal))
    }

    struct Figures {
        var events: Int
        var pushes: Int
        var seconds: Double
        var postgresCPU: Double
    }

    /// N APIs and N workers; the visits' tokens registered first (untimed), then their events timed to the last end.
    func measure(processes n: Int, databaseURL: String, rig: Rig) async throws -> Figures {
        var children: [RunningChild] = []
        defer { for child in children { child.signal(SIGTERM) } }
        let dispatcher = try await rig.dispatcherKey(databaseURL: databaseURL)
        var apis: [Client] = []
        for _ in 0..<n {
            let (child, api) = try await rig.startAPI(databaseURL: databaseURL)
            children.append(child)
            apis.append(api)
        }
        for _ in 0..<n { children.append(try rig.startWorker(databaseURL: databaseURL)) }
        let customer =
            try await apis[0].send("POST", "/v1/keys", key: dispatcher, body: ["role": "customer", "subject": "c-1"])
            .json["key"]?.stringValue ?? ""
        let prefix = "n\(n)-"
        let clients = apis
        try await Self.concurrently(visits, width: 16) { v in
            let id = prefix + "\(v)"
            let api = clients[v % clients.count]
            _ = try await api.send("POST", "/v1/visits", key: dispatcher, body: Self.visitBody(id))
            _ = try await api.send(
                "PUT", "/v1/visits/\(id)/live-activities/a", key: customer,
                body: ["pushToken": .string(Self.token(id)), "environment": "sandbox", "version": 1])
        }
        let acceptedBefore = rig.simulator.deliveries().filter(\.accepted).count
        let cpu = CPUSample.take(process: getpid())
        let started = ContinuousClock.now
        let steps: [JSONValue] = [
            ["type": "enRoute"], ["type": "nearby", "kilometresAway": 1.2], ["type": "onSite"], ["type": "completed"],
        ]
        try await Self.concurrently(visits, width: 16) { v in
            let id = prefix + "\(v)"
            for (i, step) in steps.enumerated() {
                _ = try await clients[(v + i) % clients.count].send(
                    "POST", "/v1/visits/\(id)/events", key: dispatcher, body: step)
            }
        }
        let tokens = Set((0..<visits).map { Self.token(prefix + "\($0)") })
        let deadline = ContinuousClock.now + .seconds(300)
        while true {
            let ended = rig.simulator.deliveries().filter { $0.accepted && $0.aps?["event"]?.stringValue == "end" }
            if tokens.isSubset(of: Set(ended.compactMap(\.deviceToken))) { break }
            guard ContinuousClock.now < deadline else {
                throw BenchmarkUsageError(message: "the ends did not all arrive in 300 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let elapsed = ContinuousClock.now - started
        let used = CPUSample.take(process: getpid()) - cpu
        let pushes = rig.simulator.deliveries().filter(\.accepted).count - acceptedBefore
        let seconds = elapsed.inSeconds
        return Figures(events: visits * 4, pushes: pushes, seconds: seconds, postgresCPU: used.postgres)
    }

    /// One failover under load: (seconds of the longest 503 run any client saw, events answered 201, lost).
    func failover(root: URL, rig: Rig) async throws -> (Double, Int, Int) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lv-bench-replica-\(UUID().uuidString.prefix(8))")
        let environment = ProcessInfo.processInfo.environment.merging(["LIVEVISITS_PGREPLICA_DIR": folder.path]) { $1 }
        let script = root.appendingPathComponent("scripts/pg-replica").path
        func pair(_ command: String) async throws -> String {
            let outcome = try await ChildProcess(script, [command], environment: environment).run()
            guard outcome.status == 0 else {
                throw BenchmarkUsageError(message: "scripts/pg-replica \(command): \(outcome.stderr)")
            }
            return outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        _ = try await pair("start")
        var children: [RunningChild] = []
        defer {
            for child in children { child.signal(SIGTERM) }
            _ = try? ChildProcess(script, ["destroy"], environment: environment).runBlocking()
        }
        let url = try await pair("url")
        _ = try await ChildProcess(rig.livevisits, ["migrate"], environment: rig.environment(databaseURL: url)).run()
        let dispatcher = try await rig.dispatcherKey(databaseURL: url)
        let (apiChild, api) = try await rig.startAPI(databaseURL: url)
        children.append(apiChild)
        let record = FailoverRecord()
        var clients: [Task<Void, Never>] = []
        for c in 0..<4 {
            clients.append(
                Task { [api, dispatcher, record] in
                    var v = 0
                    var firstUnavailable: ContinuousClock.Instant?
                    while !record.state.withLock({ $0.stop }) {
                        v += 1
                        let id = "c\(c)-\(v)"
                        guard let answer = try? await api.send("POST", "/v1/visits", key: dispatcher, body: Self.visitBody(id))
                        else {
                            continue
                        }
                        if answer.status == 503 {
                            if firstUnavailable == nil { firstUnavailable = .now }
                            continue
                        }
                        if answer.status == 201 {
                            record.posted.add(1, ordering: .relaxed)
                            let gap = firstUnavailable.map { ContinuousClock.now - $0 }
                            firstUnavailable = nil
                            record.state.withLock {
                                $0.answered.append(id)
                                if let gap {
                                    $0.window = max($0.window, gap.inSeconds)
                                }
                            }
                        }
                    }
                })
        }
        while record.posted.load(ordering: .relaxed) < 50 { try await Task.sleep(for: .milliseconds(20)) }
        _ = try await pair("failover")
        let after = record.posted.load(ordering: .relaxed)
        let deadline = ContinuousClock.now + .seconds(120)
        while record.posted.load(ordering: .relaxed) < after + 50, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        record.state.withLock { $0.stop = true }
        for c in clients { await c.value }
        let (answered, window) = record.state.withLock { ($0.answered, $0.window) }
        let stored = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            Set(try await pool.query("SELECT visit_id FROM visits").map { try $0.string("visit_id") })
        }
        return (window, answered.count, answered.filter { !stored.contains($0) }.count)
    }

    static func visitBody(_ id: String) -> JSONValue {
        let now = Double(Int(Date().timeIntervalSince1970))
        return [
            "visitId": .string(id), "customerId": "c-1",
            "attributes": ["customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"],
            "technician": ["id": "t-1", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"],
            "arrivalWindow": ["start": .number(now + 600), "end": .number(now + 1200)], "kilometresAway": 14.0,
        ]
    }

    static func token(_ name: String) -> String {
        var hex = ""
        for byte in Array(name.utf8) { hex += String(format: "%02x", byte) }
        while hex.count < 64 { hex += "0" }
        return String(hex.prefix(64))
    }

    /// Runs `body(0..<count)` with at most `width` at a time.
    static func concurrently(_ count: Int, width: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            for _ in 0..<min(width, count) {
                let v = next
                next += 1
                group.addTask { try await body(v) }
            }
            while try await group.next() != nil, next < count {
                let v = next
                next += 1
                group.addTask { try await body(v) }
            }
            try await group.waitForAll()
        }
    }

    /// The simulator (in this process) with a fresh signing key, and the livevisits processes around it.
    struct Rig: Sendable {
        let simulator: APNsSimulator
        let endpoint: SimulatorEndpoint
        let keyFile: String
        let livevisits: String
        let root: URL

        /// - Parameters:
        ///   - onDelivery: called on a simulator thread for every request it answered (the pipeline benchmark
        ///     notes acknowledgements there and keeps none of the records).
        ///   - recorded: how many deliveries the simulator keeps.
        static func start(
            root: URL, livevisits: String, recorded: Int = 1_000_000,
            onDelivery: (@Sendable (SimulatedDelivery) -> Void)? = nil
        ) async throws -> Rig {
            var configuration = SimulatorConfiguration()
            configuration.bundleID = "com.example.visits"
            configuration.maximumRecordedDeliveries = recorded
            configuration.onDelivery = onDelivery
            let simulator = try APNsSimulator(configuration: configuration)
            let endpoint = try await simulator.start()
            let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("lv-bench-\(UUID().uuidString).p8").path
            let key = try await ChildProcess(
                "/bin/sh",
                [
                    "-c",
                    "umask 077; openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt > '\(keyFile)'",
                ]
            ).run()
            guard key.status == 0 else { throw BenchmarkUsageError(message: "openssl: \(key.stderr)") }
            return Rig(simulator: simulator, endpoint: endpoint, keyFile: keyFile, livevisits: livevisits, root: root)
        }

        func stop() async {
            try? FileManager.default.removeItem(atPath: keyFile)
            await simulator.stop()
        }

        func environment(databaseURL: String) -> [String: String] {
            var environment = ProcessInfo.processInfo.environment
            environment["LIVEVISITS_DATABASE_URL"] = databaseURL
            environment["LIVEVISITS_MIGRATIONS_DIR"] = root.appendingPathComponent("Migrations").path
            environment["LIVEVISITS_PROJECTIONS_DIR"] = root.appendingPathComponent("Projections").path
            environment["LIVEVISITS_APNS_URL"] = endpoint.url
            environment["LIVEVISITS_APNS_CA_FILE"] = endpoint.caFile
            environment["LIVEVISITS_APNS_KEY_FILE"] = keyFile
            environment["LIVEVISITS_APNS_KEY_ID"] = "KEY1234567"
            environment["LIVEVISITS_APNS_TEAM_ID"] = "TEAM123456"
            environment["LIVEVISITS_APNS_BUNDLE_ID"] = "com.example.visits"
            environment["LIVEVISITS_LOG_LEVEL"] = "error"
            // One dispatcher key drives the load: the per-key rate limit stays on (its cost is measured) but
            // far above the load, unless the run sets its own.
            if environment["LIVEVISITS_RATE_LIMIT"] == nil { environment["LIVEVISITS_RATE_LIMIT"] = "1000000" }
            return environment
        }

        /// `livevisits worker`; `settings` are added to its environment.
        func startWorker(databaseURL: String, settings: [String: String] = [:]) throws -> RunningChild {
            try ChildProcess(livevisits, ["worker"], environment: environment(databaseURL: databaseURL).merging(settings) { $1 })
                .start(stderr: .inherit)
        }

        func startAPI(databaseURL: String) async throws -> (RunningChild, Client) {
            let (child, port) = try await startServer(databaseURL: databaseURL, arguments: ["serve", "--api-only"])
            return (child, Client(baseURL: "http://127.0.0.1:\(port)"))
        }

        /// `livevisits <arguments>` (a `serve`) on a free loopback port, once `/readyz` answers 200; `settings`
        /// are added to its environment.
        func startServer(databaseURL: String, arguments: [String], settings: [String: String] = [:]) async throws -> (
            RunningChild, UInt16
        ) {
            guard let port = LoopbackPort.bindable() else { throw BenchmarkUsageError(message: "no free loopback port") }
            var environment = environment(databaseURL: databaseURL).merging(settings) { $1 }
            environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:\(port)"
            // The load comes from one address with many connections, as through a proxy: no per-address limit.
            environment["LIVEVISITS_HTTP_MAX_CONNECTIONS_PER_IP"] = "0"
            let child = try ChildProcess(livevisits, arguments, environment: environment).start(stderr: .inherit)
            let client = Client(baseURL: "http://127.0.0.1:\(port)")
            let deadline = ContinuousClock.now + .seconds(60)
            while (try? await client.send("GET", "/readyz").status) != 200 {
                guard child.isRunning, ContinuousClock.now < deadline else {
                    child.signal(SIGTERM)
                    throw BenchmarkUsageError(message: "livevisits \(arguments.joined(separator: " ")) did not become ready")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            return (child, port)
        }

        func dispatcherKey(databaseURL: String) async throws -> String {
            try await PostgresPool.withPool(PostgresConfiguration(url: databaseURL, size: 1)) { pool in
                try await pool.withConnection {
                    try APIKeys.mint(role: .dispatcher, subject: nil, createdBy: "bench", on: $0).key
                }
            }
        }
    }

    /// What the failover's clients saw, shared between them.
    final class FailoverRecord: Sendable {
        let state = Mutex<(answered: [String], window: Double, stop: Bool)>(([], 0, false))
        let posted = Atomic<Int>(0)
    }

    struct Client: Sendable {
        let baseURL: String

        func send(_ method: String, _ path: String, key: String? = nil, body: JSONValue? = nil) async throws -> (
            status: Int, json: JSONValue
        ) {
            var request = URLRequest(url: URL(string: baseURL + path)!, timeoutInterval: 30)
            request.httpMethod = method
            if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
            if let body {
                request.httpBody = Data(body.serialized())
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONValue.parse(data)) ?? .null)
        }
    }
}
