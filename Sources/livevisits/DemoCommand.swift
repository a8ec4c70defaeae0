import APIStores
import APNsSimulator
import Foundation
import HTTPAPI
import JSON
import PersonalData
import Postgres
import Runtime

/// `livevisits demo [--keep-running] [--record FILE] [--dir DIR]`: the embedded default. With no
/// configuration it starts (or reuses) a private PostgreSQL cluster under `.demo/`, migrates, starts the
/// APNs simulator in-process with a fresh P-256 key and certificate, starts the API and the worker, then
/// plays a whole visit (and a cancelled one) through the HTTP API and prints every push as APNs received
/// it. It stops everything it started (also on Ctrl-C) and exits 1 when the pushes are not what the
/// visits imply.
enum DemoCommand {
    static let teamId = "DEMOTEAM01"
    static let keyId = "DEMOKEY001"
    static let bundleId = "com.example.fieldservice"
    /// How long one push may take to reach the simulator before the demo gives up.
    static let pushTimeoutSeconds = 60.0
    /// The demo's `activityRenewalSeconds`: visit A's iPhone activity is renewed this long after its start was
    /// acknowledged, while the demo waits for it. Long enough for the steps before that wait (a few requests)
    /// to be done first, short enough to watch.
    static let renewalSeconds = 10
    /// The demo's `activityLifetimeSeconds`: longer than the whole demo, so nothing lapses while it plays.
    static let lifetimeSeconds = 600

    struct Options {
        var keepRunning = false
        var recordFile: String?
        var directory: String?
    }

    static let syntax = CommandSyntax(
        command: "livevisits demo",
        summary:
            "Starts a private PostgreSQL cluster, the APNs simulator and the server, plays a whole visit and prints every push as APNs received it.",
        options: [
            .flag("--keep-running", "keep the server running after the visits (Ctrl-C stops everything)"),
            .value("--record", "FILE", "write what APNs received, and the verdict, as JSON to FILE"),
            .value("--dir", "DIR", "where the cluster, keys and certificates live (default <project>/.demo)"),
        ])

    static func parse(_ arguments: [String]) throws -> Options {
        let parsed = try syntax.parse(arguments)
        return Options(
            keepRunning: parsed.has("--keep-running"), recordFile: parsed.value("--record"), directory: parsed.value("--dir"))
    }

    static func run(_ arguments: [String]) async throws {
        let options = try parse(arguments)
        _ = SignalWatcher.shared  // Ctrl-C from here on is a graceful stop, not a kill.
        if ProcessInfo.processInfo.environment["LIVEVISITS_LOG_LEVEL"] == nil {
            Logger.minimumLevel.withLock { $0 = .warning }  // the pushes are the show; logs only when something is wrong
        }
        try DemoPrerequisites.check()
        let project = try Configuration.locate("scripts").deletingLastPathComponent()
        let folder =
            options.directory.map { URL(fileURLWithPath: $0).standardizedFileURL }
            ?? project.appendingPathComponent(".demo")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

        let cluster = DemoCluster(
            script: project.appendingPathComponent("scripts/pg").path,
            dataDirectory: folder.appendingPathComponent("pgdata").path)
        let reused = try await cluster.isRunning()
        progress("PostgreSQL: \(reused ? "reusing the running cluster" : "starting a private cluster") in \(folder.path)/pgdata")
        let databaseURL: String
        do {
            databaseURL = try await cluster.start()
        } catch {
            if !reused { await cluster.stop() }
            throw error
        }
        do {
            try await play(options: options, project: project, folder: folder, databaseURL: databaseURL)
        } catch {
            if !reused { await cluster.stop() }
            throw error
        }
        if !reused {
            await cluster.stop()
            progress("stopped the PostgreSQL cluster")
        }
        if !options.keepRunning {
            Console.line("To keep the server running and try it with curl: livevisits demo --keep-running")
        }
    }

    /// The demo's personal-data key file (contract §3: `demo` generates one), made once next to its cluster
    /// and kept, so a reused cluster's data keys still open.
    static func personalDataKey(in folder: URL) throws -> String {
        let path = folder.appendingPathComponent("personal-data.key").path
        if !FileManager.default.fileExists(atPath: path) { _ = try WrappingKey.generate(path: path) }
        return path
    }

    private static func play(options: Options, project: URL, folder: URL, databaseURL: String) async throws {
        // Migrate and mint the dispatcher's key (the one an operator makes with `livevisits keys create`).
        let dispatcherKey = try await PostgresPool.withPool(PostgresConfiguration(url: databaseURL, size: 1)) { pool in
            let report = try await Migrator(directory: project.appendingPathComponent("Migrations")).migrate(pool: pool)
            progress("migrations: \(report.applied.isEmpty ? "current" : "applied \(report.applied.joined(separator: ", "))")")
            return try await pool.withConnection { connection in
                try APIKeys.mint(role: .dispatcher, subject: nil, createdBy: "demo", on: connection)
            }
        }

        let keyFile = try await signingKey(in: folder)
        let scenario = DemoScenario()
        var simulatorConfiguration = SimulatorConfiguration()
        do {
            simulatorConfiguration.providerKeys = [try ProviderKey.load(file: keyFile, teamID: teamId, keyID: keyId)]
        } catch {
            throw CommandFailure("the demo's signing key: \(error)")
        }
        simulatorConfiguration.bundleID = bundleId
        simulatorConfiguration.tls = .generate(directory: folder.appendingPathComponent("apns-sim").path)
        simulatorConfiguration.onDelivery = { delivery in
            guard let device = scenario.device(of: delivery) else { return }
            Console.line("    APNs ← \(delivery.summaryLine) [\(device.rawValue)]")
        }
        let simulator: APNsSimulator
        let endpoint: SimulatorEndpoint
        do {
            simulator = try APNsSimulator(configuration: simulatorConfiguration)
            endpoint = try await simulator.start()
        } catch {
            throw CommandFailure("APNs simulator: \(error)")
        }
        progress("APNs simulator on \(endpoint.url) (CA \(endpoint.caFile))")

        let (port, taken) = DemoPort.choose()
        if taken { progress("port 8080 is taken; the API uses port \(port) instead") }
        let environment = [
            "LIVEVISITS_DATABASE_URL": databaseURL,
            "LIVEVISITS_HTTP_ADDR": "127.0.0.1:\(port)",
            "LIVEVISITS_APNS_URL": endpoint.url,
            "LIVEVISITS_APNS_CHANNELS_URL": endpoint.channelsURL,
            "LIVEVISITS_APNS_CA_FILE": endpoint.caFile,
            "LIVEVISITS_APNS_KEY_FILE": keyFile,
            "LIVEVISITS_APNS_KEY_ID": keyId,
            "LIVEVISITS_APNS_TEAM_ID": teamId,
            "LIVEVISITS_APNS_BUNDLE_ID": bundleId,
            "LIVEVISITS_PROJECTIONS_DIR": try demoRules(project: project, folder: folder),
            "LIVEVISITS_MIGRATIONS_DIR": project.appendingPathComponent("Migrations").path,
            "LIVEVISITS_PERSONAL_DATA_KEY_FILE": try personalDataKey(in: folder),
        ]
        let serveConfiguration = Configuration(environment: environment)
        let baseURL = "http://127.0.0.1:\(port)"
        let player = DemoPlayer(
            scenario: scenario, client: DemoClient(baseURL: baseURL), simulator: simulator, dispatcherKey: dispatcherKey.key)
        let outcome: Result<[SimulatedDelivery], any Error>?
        let interrupted: Bool
        do {
            let poolConfiguration = try ServeCommand.poolConfiguration(parts: [.api, .worker], configuration: serveConfiguration)
            (outcome, interrupted) = try await PostgresPool.withPool(poolConfiguration) { pool in
                let services = try await ServeCommand.services(
                    parts: [.api, .worker], pool: pool, configuration: serveConfiguration, clock: SystemClock(),
                    simulated: true, announce: { progress($0.replacingOccurrences(of: "livevisits API", with: "API + worker")) })
                // The services run until the scenario is done (or, with --keep-running, until Ctrl-C); a Ctrl-C
                // during the scenario ends the services first and the scenario is cancelled.
                return await withTaskGroup(of: Result<[SimulatedDelivery], any Error>?.self) { group in
                    group.addTask {
                        do { try await services.run() } catch { return .failure(error) }
                        return nil  // a signal ended the services
                    }
                    group.addTask {
                        do {
                            let keys = try await player.play(pushTimeout: pushTimeoutSeconds)
                            // Judged on what APNs received for the scripted visits, before any curl of the user's.
                            let received = simulator.deliveries()
                            if options.keepRunning {
                                keepRunningHelp(baseURL: baseURL, keys: keys, scenario: scenario, endpoint: endpoint)
                                _ = await SignalWatcher.shared.next()
                            }
                            return .success(received)
                        } catch {
                            return .failure(error)
                        }
                    }
                    var outcomes: [Result<[SimulatedDelivery], any Error>] = []
                    var interrupted = false
                    if let first = await group.next() {
                        if let first { outcomes.append(first) } else { interrupted = true }
                    }
                    group.cancelAll()
                    for await result in group {
                        if let result { outcomes.append(result) }
                    }
                    return (outcomes.first, interrupted)
                }
            }
        } catch {
            await simulator.stop()
            throw error
        }
        await simulator.stop()
        progress("stopped the API, the worker and the APNs simulator")

        let expected = scenario.steps(dispatcher: "", technician: "", customerAKey: "", customerBKey: "", now: 0).flatMap(
            \.pushes)
        let received: [SimulatedDelivery]
        if case .success(let deliveries)? = outcome { received = deliveries } else { received = simulator.deliveries() }
        let verdict = DemoVerdict(scenario: scenario, expected: expected, deliveries: received)
        if let file = options.recordFile {
            try verdict.record(scenario: scenario).write(to: URL(fileURLWithPath: file))
        }
        let signalled = await signalReceived()
        switch outcome {
        case .success?: break
        case .failure(let error)? where !interrupted && !signalled: throw error
        case .failure?, nil: throw CommandFailure("interrupted before the visits were played")
        }
        guard verdict.passed else {
            for problem in verdict.problems { CommandLineInterface.fail("demo: \(problem)") }
            throw CommandFailure("the pushes APNs received are not what the visits imply (\(verdict.problems.count) problems)")
        }
        progress("done: \(verdict.received.count) pushes received by APNs, as the visits imply")
    }

    /// The project's projections with the demo's rules: a priority-10 allowance of 1 per hour (so the second
    /// alert of visit A goes at priority 5), a 5-second progress interval (so a run of distance updates
    /// is coalesced without a long wait), and a renewal after `renewalSeconds` at most once per device
    /// (`maxRenewals` 1, so the renewed activity is not renewed again while the visit plays) with a lifetime
    /// of `lifetimeSeconds`; everything else as shipped. Returns the directory.
    static func demoRules(project: URL, folder: URL) throws -> String {
        let shipped = project.appendingPathComponent("Projections")
        let directory = folder.appendingPathComponent("projections")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let rules = try JSONValue.parse(Array(try Data(contentsOf: shipped.appendingPathComponent("rules.json"))))
            let replaced = [
                "budget", "progressIntervalSeconds", "activityRenewalSeconds", "activityLifetimeSeconds", "maxRenewals",
            ]
            let members = (rules.objectMembers ?? []).filter { !replaced.contains($0.key) }
            let demo = JSONValue.object(
                members + [
                    JSONMember(
                        "budget",
                        .object([
                            JSONMember("priority10PerHour", .number(1)), JSONMember("priority10PerHourFrequent", .number(1)),
                        ])),
                    JSONMember("progressIntervalSeconds", .number(5)),
                    JSONMember("activityRenewalSeconds", .number(Double(renewalSeconds))),
                    JSONMember("activityLifetimeSeconds", .number(Double(lifetimeSeconds))),
                    JSONMember("maxRenewals", .number(1)),
                ])
            try Data(demo.indentedSerialized()).write(to: directory.appendingPathComponent("rules.json"))
            // The read models' statements as shipped (`visits.sql`, `technicians.sql`, …).
            for name in try FileManager.default.contentsOfDirectory(atPath: shipped.path) where name.hasSuffix(".sql") {
                let sql = directory.appendingPathComponent(name)
                try? FileManager.default.removeItem(at: sql)
                try FileManager.default.copyItem(at: shipped.appendingPathComponent(name), to: sql)
            }
        } catch {
            throw CommandFailure("the demo's rules in \(directory.path): \(error)")
        }
        progress(
            "rules: \(directory.path)/rules.json (priority-10 allowance 1 per hour, progress interval 5 s, "
                + "renewal after \(renewalSeconds) s at most once, lifetime \(lifetimeSeconds) s)")
        return directory.path
    }

    /// The demo's ES256 signing key (`.p8`, PKCS#8 PEM), generated once with the openssl CLI and reused, so
    /// the fleet-shared provider token stored in the database stays valid across runs.
    private static func signingKey(in folder: URL) async throws -> String {
        let file = folder.appendingPathComponent("AuthKey_\(keyId).p8").path
        if FileManager.default.fileExists(atPath: file) { return file }
        _ = try await ChildProcess(
            "/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", file]
        ).check()
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        progress("generated the demo's APNs signing key \(file)")
        return file
    }

    private static func keepRunningHelp(
        baseURL: String, keys: DemoPlayer.Keys, scenario: DemoScenario, endpoint: SimulatorEndpoint
    ) {
        Console.line(
            """

            The server keeps running (Ctrl-C stops it and everything the demo started).
              console      \(baseURL)/console/   (sign in with the dispatcher key below)
              API          \(baseURL)   (/healthz, /readyz, /metrics)
              APNs sim     \(endpoint.url)   (CA \(endpoint.caFile))
              dispatcher   \(keys.dispatcher)
              technician   \(keys.technician)   (subject \(scenario.technicianId))
              customer     \(keys.customerA)   (subject \(scenario.customerA))
              tracking     \(baseURL)\(keys.trackingLink ?? "")   (visit \(scenario.visitA)'s page for a customer without the app; lapses an hour after the visit ended)

            Try:
              curl -fsS \(baseURL)/v1/visits/\(scenario.visitA) -H 'Authorization: Bearer \(keys.customerA)'
              curl -fsS \(baseURL)/v1/visits/\(scenario.visitA)/events -H 'Authorization: Bearer \(keys.dispatcher)'
              curl -fsS \(baseURL)/v1/visits/\(scenario.visitA)/live-activities -H 'Authorization: Bearer \(keys.dispatcher)'
              curl -fsS -X POST \(baseURL)/v1/visits -H 'Authorization: Bearer \(keys.dispatcher)' -d '{"customerId": "\(scenario.customerA)", "attributes": {"customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"}, "technician": {"id": "\(scenario.technicianId)", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"}, "arrivalWindow": {"start": \(Int(Date().timeIntervalSince1970) + 900), "end": \(Int(Date().timeIntervalSince1970) + 2700)}, "kilometresAway": 9.5}'
              curl -fsS -X POST \(baseURL)/v1/technicians/\(scenario.technicianId)/delay -H 'Authorization: Bearer \(keys.dispatcher)' -d '{"minutes": 15, "reason": "Stuck in traffic"}'
              curl -fsS \(baseURL)/metrics | grep livevisits_outbox
              curl -fsS --http2 --cacert \(endpoint.caFile) \(endpoint.url)/_sim/deliveries
            """)
    }

    /// Whether SIGINT/SIGTERM arrived (asked from a cancelled task, `next()` answers at once).
    private static func signalReceived() async -> Bool {
        let check = Task { await SignalWatcher.shared.next() }
        check.cancel()
        return await check.value != 0
    }

    static func progress(_ text: String) {
        Console.line("demo: \(text)")
    }
}
