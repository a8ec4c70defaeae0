import APIStores
import Foundation
import HTTPServer
import Postgres
import Runtime
import Synchronization

/// `livevisits-bench fleet-day`: a fleet's busiest hour (`FleetModel`) played against the product's own
/// processes, compressed by a speed-up factor, in both layouts, with the APNs simulator as the sink and
/// webhooks on to a receiver in this process.
///
/// Per layout: a scratch database, the processes started, every technician's current visit brought to where
/// its cycle stands (through the API, untimed), then steps: each a window of `--seconds` in which the fleet's
/// next `speed × seconds` fleet seconds are sent on time (open loop: each request goes at its due time on one
/// of `--lanes` keep-alive connections, technicians spread over them), the consoles poll every 2 s / speed,
/// aged deliveries are laid down and `livevisits prune` runs halfway. After the window the outbox and the
/// webhooks are awaited, then checked: every answered event is in the store, every delivery the worker owed
/// (neither superseded, expired nor cancelled) was acknowledged by the simulator exactly once (by `apns-id`),
/// every webhook written reached the receiver (duplicates only by id). A step passes when, in addition, every
/// route's p99 is under 100 ms, nothing failed and the requests went out on time (send lag p99 under 1 s).
/// `--speed` runs the given factors; without it the speed-up is searched: doubled from 1 while steps pass,
/// then bisected between the last pass and the first failure.
struct FleetDayBenchmark {
    static let summary =
        "a fleet's peak hour, compressed: the highest speed-up with every p99 < 100 ms, nothing lost (see --help)"
    typealias Layout = PipelineBenchmark.Layout

    var technicians = 10_000
    var speeds: [Double]?
    var seconds = 20.0
    var layouts: [Layout] = [.serve, .split]
    var lanes = 128
    var consoles = 200
    /// The consoles' pages that would show the day by technician show the board alone.
    var withoutTimeline = false
    var maximumSpeed = 64.0
    var bisections = 2

    /// A step passes with every route's p99 under this.
    static let p99Limit = 0.100
    /// …and the requests sent on time: the send lag's p99 under this.
    static let lagLimit = 1.0

    static let syntax = CommandSyntax(
        command: "livevisits-bench fleet-day", summary: summary,
        options: [
            .value("--technicians", "N", "the fleet (default 10000)"),
            .value("--speed", "LIST", "speed-ups over real time to run, one step each (default: search)"),
            .value("--seconds", "N", "each step's measured window (default 20)"),
            .value("--layouts", "LIST", "serve, split or both (default serve,split)"),
            .value("--lanes", "N", "keep-alive connections the fleet's requests come through (default 128)"),
            .value("--consoles", "N", "console pages polling (default 200)"),
            .flag("--no-timeline", "the pages showing the day by technician show the board alone"),
            .value("--max-speed", "N", "the search doubles up to this (default 64)"),
            .value("--bisections", "N", "the search's steps between the last pass and the first failure (default 2)"),
        ],
        details:
            "Needs LIVEVISITS_DATABASE_URL (the scripts/pg cluster), openssl and a built livevisits next to this binary; run from the repository root. The model of the hour is in Docs/performance.md (\"A fleet's peak hour\")."
    )

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        technicians = try parsed.integer("--technicians", in: 10...1_000_000) ?? technicians
        speeds = try parsed.value("--speed", expected: "a comma-separated list of positive numbers") { text in
            let items = text.split(separator: ",").map { Double($0) }
            guard !items.isEmpty, items.allSatisfy({ ($0 ?? 0) > 0 }) else { return nil }
            return items.compactMap { $0 }
        }
        seconds = try parsed.positiveNumber("--seconds") ?? seconds
        layouts = try parsed.choices("--layouts", of: Layout.self) ?? layouts
        lanes = try parsed.integer("--lanes", in: 1...1_024) ?? lanes
        consoles = try parsed.integer("--consoles", in: 0...2_000) ?? consoles
        withoutTimeline = parsed.has("--no-timeline")
        maximumSpeed = try parsed.positiveNumber("--max-speed") ?? maximumSpeed
        bisections = try parsed.integer("--bisections", in: 0...10) ?? bisections
    }

    var model: FleetModel { FleetModel(technicians: technicians) }

    func run() async throws {
        let serverURL = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let executable = try BenchmarkEnvironment.livevisits()
        let sink = FleetSink()
        let rig = try await ScaleBenchmark.Rig.start(root: root, livevisits: executable.path, recorded: 1) { sink.note($0) }
        defer { Task { await rig.stop() } }
        let hooks = WebhookTally()
        // The receiver is this process's HTTP server: no line per webhook.
        Logger.minimumLevel.withLock { $0 = .warning }
        let receiver = try WebhookReceiverProcess.server { hooks.note($0.body) }
        let receiving = Task { try await receiver.run() }
        defer { receiving.cancel() }
        let postmaster = try await PipelineBenchmark.postmaster(url: serverURL)
        say(
            "fleet-day: \(technicians) technicians, \(lanes) lanes, \(consoles) consoles, \(Int(seconds)) s per step; "
                + "load average \(PipelineBenchmark.loadAverage())")
        var verdicts: [(Layout, Double?, [String: Double])] = []
        for layout in layouts {
            let (best, peaks) = try await ScratchDatabase.with(
                serverURL: serverURL, migrations: root.appendingPathComponent("Migrations")
            ) { database in
                try await play(
                    layout: layout, database: database, rig: rig, sink: sink, hooks: hooks, receiverPort: receiver.address.port,
                    postmaster: postmaster)
            }
            verdicts.append((layout, best, peaks))
        }
        say("")
        for (layout, best, peaks) in verdicts {
            let memory = peaks.sorted { $0.key < $1.key }.map { String(format: "%@ %.0f MB", $0.key, $0.value) }
            say(
                "\(layout.rawValue): "
                    + (best.map { String(format: "highest passing speed-up %.1f× real time", $0) } ?? "no step passed")
                    + " (goal ≥ 5×); peak RSS " + memory.joined(separator: ", ") + " (goal < 150 MB each)")
        }
        say("load average after: \(PipelineBenchmark.loadAverage())")
    }

    // MARK: one layout

    /// Starts the layout, sets the fleet up, runs the steps; the highest passing speed-up and each process's
    /// peak RSS.
    func play(
        layout: Layout, database: ScratchDatabase, rig: ScaleBenchmark.Rig, sink: FleetSink, hooks: WebhookTally,
        receiverPort: UInt16, postmaster: Int32
    ) async throws -> (Double?, [String: Double]) {
        let settings = [
            "LIVEVISITS_WEBHOOK_URL": "http://127.0.0.1:\(receiverPort)/hooks",
            "LIVEVISITS_WEBHOOK_SECRET": "fleet-day-secret",
            "LIVEVISITS_HTTP_MAX_CONNECTIONS": String(lanes + consoles + 1_024),
        ]
        var children: [(name: String, child: RunningChild)] = []
        defer { for c in children { c.child.signal(SIGTERM) } }
        let (server, port) = try await rig.startServer(
            databaseURL: database.url, arguments: layout == .serve ? ["serve"] : ["serve", "--api-only"], settings: settings)
        children.append((layout == .serve ? "serve" : "serve --api-only", server))
        if layout == .split {
            children.append(("worker", try rig.startWorker(databaseURL: database.url, settings: settings)))
        }
        let keys = try await FleetKeys.mint(technicians: technicians, databaseURL: database.url)
        let t0 = LoadConnection.now()
        let booked = try await setUp(port: port, keys: keys)
        try await drain(database: database, within: 600)
        try await database.settle()
        // The consoles are open when the hour begins: one ask for the day they show, untimed, as a page opened
        // before it would have made. (A process's first ask for a day reads it whole; printed here.)
        var firstAsk = Double.nan
        if consoles > 0, !withoutTimeline {
            let path = "/v1/technicians?date=\(Self.consolesDay())"
            firstAsk = try await LoadConnection.drive(port: port, connections: 1) { c, _ -> Double in
                let started = LoadConnection.now()
                let answer = try c.exchange(LoadConnection.request("GET", path, key: keys.dispatcher, body: nil))
                guard answer.status == 200 else { throw BenchmarkUsageError(message: "the day answered \(answer.status)") }
                return LoadConnection.now() - started
            }[0]
        }
        say(
            String(
                format: "%@: set up %d visits in %.0f s (%d requests); the day's first ask %.0f ms; peak RSS by then %@; "
                    + "load average %@", layout.rawValue,
                technicians, LoadConnection.now() - t0, booked, firstAsk * 1000,
                children.map { String(format: "%@ %.0f MB", $0.name, CPUSample.peakMegabytes(pid: $0.child.pid)) }
                    .joined(separator: ", "), PipelineBenchmark.loadAverage()))

        var fleetTime = 0.0
        var passed: Double?
        var failed: Double?
        var planned = speeds ?? [1]
        var index = 0
        var bisected = 0
        while index < planned.count {
            let speed = planned[index]
            index += 1
            let stepPassed = try await self.step(
                speed: speed, from: fleetTime, layout: layout, port: port, keys: keys, database: database, rig: rig,
                sink: sink, hooks: hooks, processes: children, postmaster: postmaster)
            fleetTime += speed * seconds
            if stepPassed {
                passed = max(passed ?? 0, speed)
            } else {
                failed = min(failed ?? .infinity, speed)
            }
            guard speeds == nil, index == planned.count else { continue }
            // The search: double while passing, then bisect between the last pass and the first failure.
            if failed == nil, speed * 2 <= maximumSpeed {
                planned.append(speed * 2)
            } else if let low = passed, let high = failed, bisected < bisections, high - low > 0.15 {
                bisected += 1
                planned.append(((low + high) / 2 * 10).rounded() / 10)
            }
        }
        let peaks = Dictionary(
            children.map { ($0.name, CPUSample.peakMegabytes(pid: $0.child.pid)) }, uniquingKeysWith: max)
        return (passed, peaks)
    }

    /// Every technician's customer tokens, then their current visit brought to where its cycle stands (64
    /// clients, untimed); the requests made.
    func setUp(port: UInt16, keys: FleetKeys) async throws -> Int {
        let width = min(64, technicians)
        let model = model
        let made = try await LoadConnection.drive(port: port, connections: width) { c, i in
            var made = 0
            for t in stride(from: i, to: model.technicians, by: width) {
                var requests: [FleetRequest] = []
                switch model.follower(t) {
                case .pushToStart: requests.append(.pushToStartToken(t))
                case .notifications: requests.append(.notificationToken(t))
                case .app: break
                }
                requests += model.history(t).map { FleetRequest(action: $0, technician: t, cycle: 0) }
                for request in requests {
                    let bytes = request.bytes(keys: keys, now: LoadConnection.now())
                    let answer = try c.exchange(bytes)
                    made += 1
                    guard answer.status / 100 == 2 else {
                        throw BenchmarkUsageError(
                            message: "set-up: \(request.route.rawValue) for technician \(t) answered \(answer.status): "
                                + String(decoding: answer.body.prefix(300), as: UTF8.self))
                    }
                }
            }
            return made
        }
        return made.reduce(0, +)
    }

    /// Waits until no delivery or webhook is pending or being sent, and the webhook worker has turned every
    /// finished delivery into its outcome's webhook (within `seconds`, else throws). The outcomes are read
    /// after the pushes finish, by a cursor of the worker's own (`webhook_settings.deliveries_xid`): without
    /// the last clause a step's checks could count an outcome's webhook written after the drain, still
    /// being sent.
    func drain(database: ScratchDatabase, within seconds: Double) async throws {
        let deadline = LoadConnection.now() + seconds
        let open: PostgresQuery = """
            SELECT (SELECT count(*) FROM deliveries WHERE state IN ('pending', 'sending'))
                 + (SELECT count(*) FROM webhooks WHERE state IN ('pending', 'sending'))
                 + (SELECT count(*) FROM deliveries d, webhook_settings s
                    WHERE d.finished_xid IS NOT NULL AND (d.finished_xid, d.id) > (s.deliveries_xid, s.deliveries_id)) AS n
            """
        while try await database.integer(open) > 0 {
            guard LoadConnection.now() < deadline else {
                throw BenchmarkUsageError(message: "deliveries or webhooks still open \(Int(seconds)) s after the load")
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }

    // MARK: one step

    /// One step at `speed` from fleet time `from`: its figures and checks printed; true when it passed.
    func step(
        speed: Double, from fleetTime: Double, layout: Layout, port: UInt16, keys: FleetKeys, database: ScratchDatabase,
        rig: ScaleBenchmark.Rig, sink: FleetSink, hooks: WebhookTally, processes: [(name: String, child: RunningChild)],
        postmaster: Int32
    ) async throws -> Bool {
        let model = model
        let fleetSpan = speed * seconds
        // The model's fleet makes ~0.02 deliveries per technician and fleet second (see the docs): a month-old
        // stretch of as many fleet seconds as this window is what the hourly prune finds aged.
        let aged = max(1_000, Int(0.02 * Double(technicians) * fleetSpan))
        try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 1)) { pool in
            try await PruneBenchmark.insertAgedDeliveries(aged, pool: pool)
        }
        let marks = try await StepMarks.read(database)
        let loadBefore = PipelineBenchmark.loadAverage()
        let startsAt = LoadConnection.now() + 1
        let endsAt = startsAt + seconds
        // The fleet: each technician on lane t % lanes, its requests at their due times.
        var perLane = Array(repeating: [FleetLane.Item](), count: lanes)
        for t in 0..<technicians {
            for timed in model.actions(t, from: fleetTime, to: fleetTime + fleetSpan) {
                perLane[t % lanes].append(
                    FleetLane.Item(
                        due: startsAt + (timed.time - fleetTime) / speed,
                        request: FleetRequest(action: timed.action, technician: t, cycle: timed.cycle)))
            }
        }
        let fleet = perLane.map { FleetLane(items: $0.sorted { $0.due < $1.due }, keys: keys) }
        let today = Self.consolesDay()
        let pages = (0..<consoles).map {
            ConsolePage(
                kind: .of(index: $0, timeline: !withoutTimeline), index: $0, keys: keys, date: today, every: 2 / speed,
                from: startsAt, until: endsAt)
        }
        let pids = processes.map(\.child.pid)
        let before = PipelineBenchmark.cpu(processes: pids, postmaster: postmaster)
        let prune = Task { () -> (seconds: Double, removed: Int, status: Int32) in
            try await Task.sleep(for: .seconds(1 + seconds / 2))
            let started = LoadConnection.now()
            let outcome = try await ChildProcess(
                rig.livevisits, ["prune"], environment: rig.environment(databaseURL: database.url)
            ).run()
            let removed = outcome.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
            return (LoadConnection.now() - started, removed.reduce(0, +), outcome.status)
        }
        try await LoadLoop.run(port: port, clients: fleet + pages)
        let used = PipelineBenchmark.cpu(processes: pids, postmaster: postmaster) - before
        let pruned = try await prune.value
        let loadAfter = PipelineBenchmark.loadAverage()
        var drained = true
        do { try await drain(database: database, within: 120) } catch { drained = false }

        // Routes.
        var routes: [FleetRoute: RouteFigures] = [:]
        for lane in fleet { for (route, figures) in lane.figures { routes[route, default: RouteFigures()].merge(figures) } }
        for page in pages { for (route, figures) in page.figures { routes[route, default: RouteFigures()].merge(figures) } }
        let lags = fleet.flatMap(\.lags).sorted()
        let lagP99 = Percentile.of(lags, 0.99)
        let checks = try await FleetChecks.run(
            database: database, marks: marks, lanes: fleet, sink: sink, hooks: hooks)

        say("")
        say(
            String(
                format: "%@ at %.1f× real time: fleet seconds %.0f–%.0f in %.0f s; load average %@ → %@",
                layout.rawValue, speed, fleetTime, fleetTime + fleetSpan, seconds, loadBefore, loadAfter))
        say("  route                                         requests  per s    p50 ms   p99 ms  failed")
        var slow: [String] = []
        var failures = 0
        for route in FleetRoute.allCases {
            guard let f = routes[route], f.count > 0 else { continue }
            let sorted = f.latencies.sorted()
            let p99 = Percentile.of(sorted, 0.99)
            if p99 >= Self.p99Limit { slow.append(route.rawValue) }
            failures += f.failed
            say(
                String(
                    format: "  %@ %8d  %6.0f  %8.1f  %7.1f  %6d%@",
                    route.rawValue.padding(toLength: 44, withPad: " ", startingAt: 0),
                    f.count, Double(f.count) / seconds, Percentile.of(sorted, 0.5) * 1000, p99 * 1000, f.failed,
                    f.firstFailure.map { " (first: \($0))" } ?? ""))
        }
        say(String(format: "  send lag (due → sent) p99 %.1f ms, max %.1f ms", lagP99 * 1000, (lags.last ?? 0) * 1000))
        say(checks.lines.map { "  " + $0 }.joined(separator: "\n"))
        say(
            String(
                format: "  prune halfway: %d rows in %.2f s (exit %d; %d aged rows laid down before the step)", pruned.removed,
                pruned.seconds, pruned.status, aged))
        let window = max(seconds, 1)
        say(
            String(
                format:
                    "  CPU in cores over the window and drain: livevisits %.2f, PostgreSQL %.2f, this process (load, sink, receiver) %.2f",
                used.ours / window, used.postgres / window, used.bench / window))
        say(
            "  peak RSS so far: "
                + processes.map { String(format: "%@ %.0f MB", $0.name, CPUSample.peakMegabytes(pid: $0.child.pid)) }
                .joined(separator: ", "))
        var reasons: [String] = []
        if !slow.isEmpty { reasons.append("p99 ≥ 100 ms on " + slow.joined(separator: ", ")) }
        if failures > 0 { reasons.append("\(failures) requests failed") }
        if lagP99 >= Self.lagLimit { reasons.append(String(format: "requests sent late (lag p99 %.0f ms)", lagP99 * 1000)) }
        if !drained { reasons.append("outbox or webhooks not drained within 120 s") }
        reasons += checks.problems
        if pruned.status != 0 { reasons.append("prune exited \(pruned.status)") }
        say("  verdict: " + (reasons.isEmpty ? "pass" : "fail — " + reasons.joined(separator: "; ")))
        return reasons.isEmpty
    }

    /// The day the consoles' pages show: that of the visits' arrival windows, half an hour ahead.
    static func consolesDay() -> String { utcDate(Date().timeIntervalSince1970 + 1_800) }

    static func utcDate(_ epoch: Double) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: Date(timeIntervalSince1970: epoch))
    }

    /// A line on stdout at once (print buffers when stdout is a pipe).
    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

// MARK: keys

/// The fleet's keys: one per technician and per customer (minted in the database), a dispatcher's and an ops key.
struct FleetKeys: Sendable {
    let dispatcher: String
    let ops: String
    let technicians: [String]
    let customers: [String]

    static func mint(technicians count: Int, databaseURL: String) async throws -> FleetKeys {
        let technicians = KeyList(count: count)
        let customers = KeyList(count: count)
        return try await PostgresPool.withPool(PostgresConfiguration(url: databaseURL, size: 8)) { pool in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        for t in stride(from: lane, to: count, by: 8) {
                            try await pool.withConnection { c in
                                technicians.set(
                                    t, try APIKeys.mint(role: .technician, subject: "t-\(t)", createdBy: nil, on: c).key)
                                customers.set(t, try APIKeys.mint(role: .customer, subject: "c-\(t)", createdBy: nil, on: c).key)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let (dispatcher, ops) = try await pool.withConnection { c in
                (
                    try APIKeys.mint(role: .dispatcher, subject: nil, createdBy: "bench", on: c).key,
                    try APIKeys.mint(role: .ops, subject: nil, createdBy: "bench", on: c).key
                )
            }
            return FleetKeys(dispatcher: dispatcher, ops: ops, technicians: technicians.values, customers: customers.values)
        }
    }
}
