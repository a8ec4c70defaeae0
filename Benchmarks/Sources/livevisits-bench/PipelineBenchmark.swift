import APNsSimulator
import Foundation
import JSON
import Postgres
import Runtime
import Synchronization

/// `livevisits-bench pipeline`: the whole pipeline, `POST /v1/visits/{id}/events` to APNs's acknowledgement,
/// in both process layouts (`serve`, API and worker in one process; `serve --api-only` plus a `worker`),
/// with the machine's own references measured in the same run.
///
/// The sink standing in for APNs is the project's simulator in this process (HTTP/2 over TLS, recording
/// nothing but the acknowledgement times). The load generator is this process too: one thread and one
/// keep-alive connection per client, each client posting status events (enRoute, nearby, reassigned, round
/// and round) to visits of its own, each event → one `update` to the visit's registered Live Activity, its
/// `kilometresAway` numbering it so the sink's acknowledgement is matched to the POST that caused it.
/// Per layout and connection count: events/s (answered 201), pushes acknowledged, POST → acknowledgement
/// p50/p99, HTTP p99, the delivery leg alone (the POST's answer → acknowledgement) p50/p99, and CPU per
/// event of ours (the livevisits processes), of PostgreSQL (this cluster's processes only) and of this
/// process (load generator and sink); peak memory. The split layout first drains a
/// backlog (the catch-up pushes of `--backlog` registrations, enqueued while no worker ran) with one
/// worker, and right after it aioapns (one connection, 100 in flight, installed from PyPI into a virtual
/// environment under .build) against the same sink; without a drain aioapns runs at the end. Then pgbench's
/// single-row insert (16 clients), and the ratios.
struct PipelineBenchmark {
    static let summary = "end to end POST → APNs ack (serve; serve --api-only + worker), backlog drain, vs pgbench and aioapns"
    var connections = [16, 64]
    var seconds = 10.0
    var visitsPerConnection = 100
    var backlog = 20_000
    var layouts: [Layout] = [.serve, .split]
    /// The process layouts: API and worker in one `serve`, or `serve --api-only` beside a `worker`.
    enum Layout: String, CaseIterable { case serve, split }
    var runPgbench = true
    var runAioapns = true
    var pgbenchPath = "/usr/lib/postgresql/15/bin/pgbench"

    static let syntax = CommandSyntax(
        command: "livevisits-bench pipeline", summary: summary,
        options: [
            .value("--connections", "LIST", "client connections per measurement (default 16,64)"),
            .value("--seconds", "N", "seconds of load per measurement (default 10)"),
            .value("--visits-per-connection", "N", "visits each client posts to, round robin (default 100)"),
            .value("--backlog", "N", "pushes one worker drains in the split layout, 0 for none (default 20000)"),
            .value("--layouts", "LIST", "serve, split or both (default serve,split)"),
            .flag("--no-pgbench", "skip pgbench"),
            .flag("--no-aioapns", "skip aioapns"),
            .value("--pgbench", "PATH", "pgbench binary (default /usr/lib/postgresql/15/bin/pgbench)"),
        ],
        details:
            "Needs LIVEVISITS_DATABASE_URL (the scripts/pg cluster), openssl, python3 with venv (for aioapns, from PyPI), a built livevisits next to this binary; run from the repository root. Each measurement starts from vacuumed tables (VACUUM (ANALYZE), as pgbench does) and a CHECKPOINT (the role needs pg_checkpoint or superuser)."
    )

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        connections = try parsed.integers("--connections", in: 1...512) ?? connections
        seconds = try parsed.positiveNumber("--seconds") ?? seconds
        visitsPerConnection = try parsed.integer("--visits-per-connection", in: 1...100_000) ?? visitsPerConnection
        backlog = try parsed.integer("--backlog", in: 0...10_000_000) ?? backlog
        layouts = try parsed.choices("--layouts", of: Layout.self) ?? layouts
        runPgbench = !parsed.has("--no-pgbench")
        runAioapns = !parsed.has("--no-aioapns")
        pgbenchPath = parsed.value("--pgbench") ?? pgbenchPath
    }

    // MARK: figures

    struct Run {
        var layout: Layout
        var connections: Int
        var events = 0
        var refused = 0
        var pushes = 0
        /// Events whose push was replaced, before it went, by the next event's on the same visit (contract §6,
        /// "Superseding"): never acknowledged, and not lost. pushes + superseded = events when nothing is lost.
        var superseded = 0
        var seconds = 0.0
        var p50 = 0.0
        var p99 = 0.0
        var httpP99 = 0.0
        /// The delivery leg: from the POST's answer to the push's acknowledgement.
        var legP50 = 0.0
        var legP99 = 0.0
        var ours = 0.0
        var postgres = 0.0
        var bench = 0.0
        /// Commands per group-commit batch (`livevisits_command_batched_total` / `…_batches_total`).
        var commandsPerBatch = 0.0
        /// The share of the outbox worker's claims that found nothing (`serve` only: a lone worker has no `/metrics`).
        var emptyClaims = Double.nan
        var eventsPerSecond: Double { Double(events) / seconds }
    }

    struct Drain {
        var pushes = 0
        var seconds = 0.0
        var worker = 0.0
        var postgres = 0.0
        var rate: Double { seconds > 0 ? Double(pushes - 1) / seconds : 0 }
    }

    func run() async throws {
        let serverURL = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let executable = try BenchmarkEnvironment.livevisits()
        let python = runAioapns ? try await Self.aioapnsPython(root: root) : nil
        let book = AckBook()
        let rig = try await ScaleBenchmark.Rig.start(root: root, livevisits: executable.path, recorded: 1) {
            book.note($0)
        }
        defer { Task { await rig.stop() } }
        let postmaster = try await Self.postmaster(url: serverURL)
        say(String(format: "load average before: %@", Self.loadAverage()))
        // The servers inherit this environment: a tuning variable set for the run is said with its figures.
        for name in [
            "LIVEVISITS_COMMAND_BATCHES", "LIVEVISITS_COMMAND_WRITES", "LIVEVISITS_DB_POOL_SIZE", "LIVEVISITS_HTTP_THREADS",
        ] {
            if let value = ProcessInfo.processInfo.environment[name] { say("\(name)=\(value)") }
        }

        var runs: [Run] = []
        var drain: Drain?
        var aioapnsRate: Double?
        var peaks: [Layout: Double] = [:]
        for layout in layouts {
            let database = try await ScratchDatabase.create(
                serverURL: serverURL, migrations: root.appendingPathComponent("Migrations"))
            do {
                let (r, d, peak) = try await measure(
                    layout: layout, database: database, rig: rig, book: book, postmaster: postmaster, python: python)
                runs += r
                if let d {
                    drain = d.drain
                    aioapnsRate = d.aioapns
                }
                peaks[layout] = peak
                await database.drop()
            } catch {
                await database.drop()
                throw error
            }
        }

        var pgbenchTPS: Double?
        if runPgbench {
            let database = try await ScratchDatabase.create(
                serverURL: serverURL, migrations: root.appendingPathComponent("Migrations"))
            do {
                let pgbench = PgBench(path: pgbenchPath, url: database.url, streams: 1000)
                try await pgbench.prepare(eventData: AppendBenchmark.eventData)
                pgbenchTPS = try pgbench.run(clients: 16, seconds: 5)
                await database.drop()
            } catch {
                await database.drop()
                throw error
            }
        }
        if let python, aioapnsRate == nil {
            aioapnsRate = try await Self.aioapns(python: python, rig: rig, count: max(backlog, 20_000))
        }

        say("")
        say(String(format: "load average after: %@", Self.loadAverage()))
        say(
            "layout  conns  events/s  events  refused  pushes acked  superseded  POST→ack p50 ms  p99 ms  HTTP p99 ms  answer→ack p50 ms  p99 ms | CPU µs/event: ours  PostgreSQL  bench (load+sink) | commands/batch  empty claims"
        )
        for r in runs {
            say(
                String(
                    format:
                        "%-6@  %5d  %8.0f  %6d  %7d  %12d  %10d  %15.1f  %6.1f  %11.1f  %17.1f  %6.1f | %18.0f  %10.0f  %17.0f | %14.1f  %@",
                    r.layout.rawValue, r.connections,
                    r.eventsPerSecond, r.events, r.refused, r.pushes, r.superseded, r.p50 * 1000, r.p99 * 1000, r.httpP99 * 1000,
                    r.legP50 * 1000, r.legP99 * 1000,
                    r.ours / Double(max(r.events, 1)) * 1e6, r.postgres / Double(max(r.events, 1)) * 1e6,
                    r.bench / Double(max(r.events, 1)) * 1e6, r.commandsPerBatch,
                    // The worker of the split layout serves no /metrics: no figure there.
                    Self.rightAligned(r.emptyClaims.isNaN ? "-" : String(format: "%.0f%%", r.emptyClaims * 100), 12)))
        }
        for (layout, peak) in peaks.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            say(String(format: "peak memory (VmHWM) of the livevisits processes, %@: %.0f MB", layout.rawValue, peak))
        }
        if book.repeated > 0 { say("acknowledgements of a state already acknowledged: \(book.repeated)") }
        for r in runs where r.pushes + r.superseded < r.events {
            say(
                "\(r.layout) at \(r.connections) connections: \(r.events - r.pushes - r.superseded) accepted events "
                    + "neither acknowledged nor superseded 3 s after the load")
        }
        if let drain {
            say(
                String(
                    format:
                        "backlog: one worker drained %d pushes in %.2f s = %.0f pushes/s; CPU µs/push: worker %.0f, PostgreSQL %.0f",
                    drain.pushes, drain.seconds, drain.rate, drain.worker / Double(max(drain.pushes, 1)) * 1e6,
                    drain.postgres / Double(max(drain.pushes, 1)) * 1e6))
        }
        if let aioapnsRate {
            say(String(format: "aioapns (one connection, 100 in flight) against the same sink: %.0f pushes/s", aioapnsRate))
            if let drain {
                say(String(format: "ratio: one worker's drain / aioapns = %.2f× (target ≥ 2)", drain.rate / aioapnsRate))
            }
        }
        if let pgbenchTPS {
            say(String(format: "pgbench single-row insert, 16 clients: %.0f tps", pgbenchTPS))
            for r in runs {
                say(
                    String(
                        format: "ratio: %@ at %d connections, events/s / pgbench tps = %.2f", r.layout.rawValue, r.connections,
                        r.eventsPerSecond / pgbenchTPS))
            }
        }
    }

    // MARK: one layout

    /// One layout's measurements; for `split` with a backlog also the drain and, right after it (the two sides of
    /// one ratio, measured minutes apart on a shared machine, met different loads), aioapns against the same sink.
    func measure(
        layout: Layout, database: ScratchDatabase, rig: ScaleBenchmark.Rig, book: AckBook, postmaster: Int32,
        python: String?
    ) async throws -> ([Run], (drain: Drain, aioapns: Double?)?, Double) {
        var children: [RunningChild] = []
        defer { for child in children { child.signal(SIGTERM) } }
        let databaseURL = database.url
        let dispatcher = try await rig.dispatcherKey(databaseURL: databaseURL)
        let arguments = layout == .serve ? ["serve"] : ["serve", "--api-only"]
        let (server, port) = try await rig.startServer(databaseURL: databaseURL, arguments: arguments)
        children.append(server)
        let customer = try await Self.customerKey(port: port, dispatcher: dispatcher)

        let loadVisits = (connections.max() ?? 1) * visitsPerConnection
        let visits = layout == .split ? max(loadVisits, backlog) : loadVisits
        let prefix = "p\(layout)-"
        let acceptedBefore = book.accepted
        try await setUp(visits: visits, prefix: prefix, port: port, dispatcher: dispatcher, customer: customer)

        var processes = [server.pid]
        var drain: (drain: Drain, aioapns: Double?)?
        let cursor = VisitCursor(count: visits)
        if layout == .split && backlog > 0 {
            // The backlog: one event per visit posted while no worker runs, then one worker started.
            try await post(visits: visits, prefix: prefix, port: port, dispatcher: dispatcher, cursor: cursor)
            try await database.settle()
            let before = Self.cpu(processes: [], postmaster: postmaster)
            book.markDrain(from: LoadConnection.now())
            let worker = try rig.startWorker(databaseURL: databaseURL)
            children.append(worker)
            processes.append(worker.pid)
            try await Self.waitFor(book, accepted: acceptedBefore + visits, within: 300)
            let used = Self.cpu(processes: [worker.pid], postmaster: postmaster) - before
            let (first, last) = book.drainSpan()
            let drained = Drain(pushes: visits, seconds: last - first, worker: used.ours, postgres: used.postgres)
            var aioapns: Double?
            if let python { aioapns = try await Self.aioapns(python: python, rig: rig, count: max(backlog, 20_000)) }
            drain = (drained, aioapns)
        } else {
            if layout == .split {
                let worker = try rig.startWorker(databaseURL: databaseURL)
                children.append(worker)
                processes.append(worker.pid)
            }
            // Warm-up, untimed: every visit's first event (the first pushes after start-up were seconds late:
            // the APNs connection and the first claims), its push awaited.
            try await post(visits: visits, prefix: prefix, port: port, dispatcher: dispatcher, cursor: cursor)
            try await Self.waitFor(book, accepted: acceptedBefore + visits, within: 300)
        }

        var runs: [Run] = []
        for c in connections {
            // Each measurement from vacuumed tables (as pgbench runs) and a checkpoint, not from what the one before
            // left.
            try await database.settle()
            try await Task.sleep(for: .seconds(1))
            runs.append(
                try await load(
                    layout: layout, connections: c, prefix: prefix, port: port, dispatcher: dispatcher, cursor: cursor,
                    book: book, processes: processes, postmaster: postmaster, database: database))
        }
        let peak = processes.map(CPUSample.peakMegabytes(pid:)).reduce(0, +)
        return (runs, drain, peak)
    }

    /// A key of customer `c-1` (the customer of every visit `setUp` books), minted through the API.
    static func customerKey(port: UInt16, dispatcher: String) async throws -> String {
        let answer = try await LoadConnection.drive(port: port, connections: 1) { c, _ in
            try c.exchange(
                LoadConnection.request(
                    "POST", "/v1/keys", key: dispatcher, body: #"{"role":"customer","subject":"c-1"}"#))
        }[0]
        guard answer.status == 201, let customer = (try? JSONValue.parse(answer.body))?["key"]?.stringValue else {
            throw BenchmarkUsageError(message: "POST /v1/keys answered \(answer.status)")
        }
        return customer
    }

    /// Books the visits and registers a Live Activity for each (64 clients, untimed).
    func setUp(visits: Int, prefix: String, port: UInt16, dispatcher: String, customer: String) async throws {
        let width = min(64, visits)
        let now = Int(Date().timeIntervalSince1970)
        let answers = try await LoadConnection.drive(port: port, connections: width) { c, i in
            var bad = 0
            for v in stride(from: i, to: visits, by: width) {
                let id = prefix + "\(v)"
                let visit = """
                    {"visitId":"\(id)","customerId":"c-1","attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row",\
                    "jobSummary":"Boiler check"},"technician":{"id":"t-1","name":"Sam","avatarSymbol":"person.crop.circle",\
                    "vanDescription":"White van"},"arrivalWindow":{"start":\(now + 600),"end":\(now + 1200)},"kilometresAway":40000}
                    """
                if try c.exchange(LoadConnection.request("POST", "/v1/visits", key: dispatcher, body: visit)).status != 201 {
                    bad += 1
                }
                let activity = #"{"pushToken":"\#(Self.token(v, prefix))","environment":"sandbox","version":1}"#
                let path = "/v1/visits/\(id)/live-activities/a"
                if try c.exchange(LoadConnection.request("PUT", path, key: customer, body: activity)).status / 100 != 2 {
                    bad += 1
                }
            }
            return bad
        }
        let bad = answers.reduce(0, +)
        guard bad == 0 else { throw BenchmarkUsageError(message: "\(bad) set-up requests failed") }
    }

    /// One event per visit (64 clients, untimed).
    func post(visits: Int, prefix: String, port: UInt16, dispatcher: String, cursor: VisitCursor) async throws {
        let width = min(64, visits)
        let bad = try await LoadConnection.drive(port: port, connections: width) { c, i in
            var bad = 0
            for v in stride(from: i, to: visits, by: width) {
                let (path, body) = Self.event(visit: v, prefix: prefix, cursor: cursor)
                if try c.exchange(LoadConnection.request("POST", path, key: dispatcher, body: body)).status == 201 {
                    cursor.advance(v)
                } else {
                    bad += 1
                }
            }
            return bad
        }.reduce(0, +)
        guard bad == 0 else { throw BenchmarkUsageError(message: "\(bad) backlog events failed") }
    }

    /// The visit's next event: enRoute, nearby, reassigned, round and round, numbered by `kilometresAway`.
    static func event(visit v: Int, prefix: String, cursor: VisitCursor) -> (path: String, body: String) {
        let n = cursor.count(v)
        let km = n + 1
        let body: String
        switch n % 3 {
        case 0: body = #"{"type":"enRoute","kilometresAway":\#(km)}"#
        case 1: body = #"{"type":"nearby","kilometresAway":\#(km)}"#
        default:
            body = """
                {"type":"reassigned","kilometresAway":\(km),"technician":{"id":"t-\(n / 3 % 2 + 2)","name":"Kim",\
                "avatarSymbol":"person.crop.circle","vanDescription":"Red van"}}
                """
        }
        return ("/v1/visits/\(prefix)\(v)/events", body)
    }

    /// `text` padded on the left to `width` characters (`String(format:)` does not pad a `%@`).
    static func rightAligned(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }

    /// One measurement: `connections` clients post for `seconds`, then the pushes are awaited.
    func load(
        layout: Layout, connections: Int, prefix: String, port: UInt16, dispatcher: String, cursor: VisitCursor,
        book: AckBook, processes: [Int32], postmaster: Int32, database: ScratchDatabase
    ) async throws -> Run {
        let owned = connections * visitsPerConnection
        let supersededCount: PostgresQuery = "SELECT count(*) AS n FROM deliveries WHERE state = 'superseded'"
        let supersededBefore = try await database.integer(supersededCount)
        let metricsBefore = try await Self.metrics(port: port)
        let before = Self.cpu(processes: processes, postmaster: postmaster)
        let started = LoadConnection.now()
        let deadline = started + seconds
        let posters = (0..<connections).map { i in
            EventPoster(
                visits: Array(stride(from: i, to: owned, by: connections)), prefix: prefix, dispatcher: dispatcher,
                cursor: cursor,
                until: deadline)
        }
        try await LoadLoop.run(port: port, clients: posters)
        let posted = posters.map(\.posted)
        let all = posted.flatMap { $0 }
        let accepted = all.filter { $0.status == 201 }
        // Wait for the pushes: until every event's is acknowledged, or none came for 3 s (superseded ones never will).
        var lastCount = -1
        var quietSince = LoadConnection.now()
        while true {
            let count = accepted.reduce(0) { $0 + (book.ack(Self.token($1.visit, prefix), $1.km) == nil ? 0 : 1) }
            if count == accepted.count { break }
            if count != lastCount {
                lastCount = count
                quietSince = LoadConnection.now()
            } else if LoadConnection.now() - quietSince > 3 {
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let used = Self.cpu(processes: processes, postmaster: postmaster) - before
        var delays: [Double] = []
        var legs: [Double] = []
        for p in accepted {
            guard let at = book.ack(Self.token(p.visit, prefix), p.km) else { continue }
            delays.append(at - p.sent)
            legs.append(at - p.answered)
        }
        delays.sort()
        legs.sort()
        let http = all.map { $0.answered - $0.sent }.sorted()
        let percentile = Percentile.of
        let ended = all.map(\.answered).max() ?? deadline
        let metricsAfter = try await Self.metrics(port: port)
        let superseded = try await database.integer(supersededCount) - supersededBefore
        func grown(_ name: String) -> Double { (metricsAfter[name] ?? 0) - (metricsBefore[name] ?? 0) }
        let emptyClaims = grown(#"livevisits_outbox_claims_total{found="none"}"#)
        let claims = emptyClaims + grown(#"livevisits_outbox_claims_total{found="some"}"#)
        return Run(
            layout: layout, connections: connections, events: accepted.count, refused: all.count - accepted.count,
            pushes: delays.count, superseded: superseded, seconds: ended - started, p50: percentile(delays, 0.5),
            p99: percentile(delays, 0.99),
            httpP99: percentile(http, 0.99), legP50: percentile(legs, 0.5), legP99: percentile(legs, 0.99), ours: used.ours,
            postgres: used.postgres, bench: used.bench,
            commandsPerBatch: grown("livevisits_command_batched_total") / max(grown("livevisits_command_batches_total"), 1),
            emptyClaims: layout == .serve ? emptyClaims / claims : .nan)
    }

    struct Posted {
        let visit: Int
        let km: Int
        let sent: Double
        let answered: Double
        let status: Int
    }

    // MARK: helpers

    /// A line on stdout at once (print buffers when stdout is a pipe).
    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    struct Used {
        var ours: Double
        var postgres: Double
        var bench: Double
        static func - (a: Used, b: Used) -> Used {
            Used(ours: a.ours - b.ours, postgres: a.postgres - b.postgres, bench: a.bench - b.bench)
        }
    }

    static func cpu(processes: [Int32], postmaster: Int32) -> Used {
        Used(
            ours: processes.map(CPUSample.seconds(pid:)).reduce(0, +), postgres: CPUSample.clusterSeconds(postmaster: postmaster),
            bench: CPUSample.thisProcess())
    }

    static func waitFor(_ book: AckBook, accepted: Int, within seconds: Double) async throws {
        let deadline = LoadConnection.now() + seconds
        while book.accepted < accepted {
            guard LoadConnection.now() < deadline else {
                throw BenchmarkUsageError(
                    message: "only \(book.accepted) of \(accepted) pushes were acknowledged within \(Int(seconds)) s")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The cluster's postmaster: the parent of a backend of ours.
    static func postmaster(url: String) async throws -> Int32 {
        // Its parent is read while the backend lives (after the pool closes it may be gone already).
        let parent = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            let backend = try await pool.query("SELECT pg_backend_pid() AS pid").first.map { try $0.int("pid") } ?? 0
            return CPUSample.postmaster(ofBackend: Int32(backend))
        }
        guard let parent, parent > 1 else {
            throw BenchmarkUsageError(message: "cannot find the PostgreSQL postmaster (is the cluster on this machine?)")
        }
        return parent
    }

    /// The API process's metrics (`GET /metrics`), by series.
    static func metrics(port: UInt16) async throws -> [String: Double] {
        let answer = try await LoadConnection.drive(port: port, connections: 1) { c, _ in
            try c.exchange(LoadConnection.request("GET", "/metrics", key: "", body: nil))
        }[0]
        return MetricsText.values(String(decoding: answer.body, as: UTF8.self))
    }

    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3)
            .joined(separator: " ")
    }

    /// A 64-hex-digit token per visit.
    static func token(_ visit: Int, _ prefix: String) -> String {
        var hex = ""
        for byte in Array(prefix.utf8) { hex += String(byte, radix: 16) }
        let digits = String(visit, radix: 16)
        hex += "ff" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits  // fixed width: 0x1 ≠ 0x10
        return String((hex + String(repeating: "0", count: 64)).prefix(64))
    }

    // MARK: aioapns

    /// The virtual environment's python with aioapns (created under .build on first use).
    static func aioapnsPython(root: URL) async throws -> String {
        let venv = root.appendingPathComponent(".build/aioapns-venv")
        let python = venv.appendingPathComponent("bin/python").path
        let probe = try? await ChildProcess(python, ["-c", "import aioapns"]).run()
        if probe?.status == 0 { return python }
        let create = try await ChildProcess("/usr/bin/python3", ["-m", "venv", venv.path]).run()
        guard create.status == 0 else { throw BenchmarkUsageError(message: "python3 -m venv: \(create.stderr)") }
        let install = try await ChildProcess(
            venv.appendingPathComponent("bin/pip").path, ["install", "--quiet", "aioapns"]
        ).run()
        guard install.status == 0 else { throw BenchmarkUsageError(message: "pip install aioapns: \(install.stderr)") }
        return python
    }

    /// aioapns sending `count` pushes over one connection with 100 in flight; its pushes/s.
    static func aioapns(python: String, rig: ScaleBenchmark.Rig, count: Int) async throws -> Double {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("lv-bench-aioapns-\(UUID().uuidString).py")
        try aioapnsScript.write(to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        let url = URL(string: rig.endpoint.url)!
        let outcome = try await ChildProcess(
            python,
            [
                script.path, url.host ?? "127.0.0.1", String(url.port ?? 443), rig.keyFile, String(count), "100",
                rig.endpoint.caFile,
            ]
        ).run()
        guard outcome.status == 0, let rate = Double(outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchmarkUsageError(message: "aioapns failed (\(outcome.status)): \(outcome.stderr.suffix(800))")
        }
        return rate
    }

    static let aioapnsScript = """
        import asyncio, ssl, sys, time
        from aioapns import APNs, NotificationRequest, PushType, connection

        host, port, keyfile, count, inflight, cafile = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
        connection.APNsDevelopmentClientProtocol.APNS_SERVER = host
        connection.APNsDevelopmentClientProtocol.APNS_PORT = port

        async def main():
            context = ssl.create_default_context(cafile=cafile)
            apns = APNs(key=open(keyfile).read(), key_id="KEY1234567", team_id="TEAM123456",
                        topic="com.example.visits.push-type.liveactivity", use_sandbox=True, max_connections=1,
                        ssl_context=context)
            token = "ab" * 32
            failed = 0
            next_index = 0
            async def worker():
                nonlocal next_index, failed
                while next_index < count:
                    i = next_index
                    next_index += 1
                    message = {"aps": {"timestamp": 1790000000 + i, "event": "update",
                               "content-state": {"status": "enRoute", "kilometresAway": 40000 + i % 50}}}
                    result = await apns.send_notification(NotificationRequest(
                        device_token=token, message=message, priority=5, push_type=PushType.LIVEACTIVITY))
                    if not result.is_successful:
                        failed += 1
            # One push first, so the connection (TLS, JWT) is up before the clock starts.
            await apns.send_notification(NotificationRequest(device_token=token, message={"aps": {"timestamp": 1, "event": "update", "content-state": {}}}, push_type=PushType.LIVEACTIVITY, priority=5))
            started = time.monotonic()
            await asyncio.gather(*(worker() for _ in range(inflight)))
            elapsed = time.monotonic() - started
            if failed:
                print(f"{failed} pushes failed", file=sys.stderr)
                sys.exit(1)
            print(count / elapsed)

        asyncio.run(main())

        """
}

/// One connection of the measured load: posts the next event of its own visits, round and round, until the
/// deadline, noting when each went out and when its answer came.
final class EventPoster: LoadClient {
    private let visits: [Int]
    private let prefix: String
    private let dispatcher: String
    private let cursor: VisitCursor
    private let deadline: Double
    private var k = 0
    private var current: (visit: Int, km: Int, sent: Double)?
    private(set) var posted: [PipelineBenchmark.Posted] = []

    init(visits: [Int], prefix: String, dispatcher: String, cursor: VisitCursor, until deadline: Double) {
        self.visits = visits
        self.prefix = prefix
        self.dispatcher = dispatcher
        self.cursor = cursor
        self.deadline = deadline
        posted.reserveCapacity(4_000)
    }

    func next() -> [UInt8]? {
        guard !visits.isEmpty, LoadConnection.now() < deadline else { return nil }
        let v = visits[k % visits.count]
        k += 1
        let (path, body) = PipelineBenchmark.event(visit: v, prefix: prefix, cursor: cursor)
        let request = LoadConnection.request("POST", path, key: dispatcher, body: body)
        current = (v, cursor.count(v) + 1, LoadConnection.now())
        return request
    }

    func answered(status: Int, body: [UInt8]) {
        let answered = LoadConnection.now()
        guard let (v, km, sent) = current else { return }
        if status == 201 { cursor.advance(v) }
        posted.append(PipelineBenchmark.Posted(visit: v, km: km, sent: sent, answered: answered, status: status))
    }
}

/// Each visit's events so far (the next one's type and number follow from it). A visit belongs to one
/// client during a measurement (one loop thread), so its slot needs no lock.
final class VisitCursor: @unchecked Sendable {
    private let counts: UnsafeMutableBufferPointer<Int>

    init(count: Int) {
        counts = .allocate(capacity: count)
        counts.initialize(repeating: 0)
    }

    deinit { counts.deallocate() }

    func count(_ visit: Int) -> Int { counts[visit] }
    func advance(_ visit: Int) { counts[visit] += 1 }
}

/// The sink's acknowledgements: per token and `kilometresAway`, when the simulator answered 200.
final class AckBook: Sendable {
    private struct State {
        var acks: [String: Double] = [:]
        var accepted = 0
        var drainFrom = Double.infinity
        var first = Double.infinity
        var last = 0.0
        /// Acknowledgements of a state already acknowledged (the first one counts).
        var repeated = 0
    }
    private let state = Mutex(State())

    var repeated: Int { state.withLock { $0.repeated } }

    func note(_ delivery: SimulatedDelivery) {
        guard delivery.status == 200 else { return }
        let at = delivery.answeredAt ?? delivery.receivedAt
        let km = delivery.aps?["content-state"]?["kilometresAway"]?.doubleValue
        let token = delivery.deviceToken ?? ""
        state.withLock { s in
            s.accepted += 1
            if at >= s.drainFrom {
                s.first = min(s.first, at)
                s.last = max(s.last, at)
            }
            if let km, km < 40_000 {
                let key = "\(token)/\(Int(km))"
                if s.acks[key] == nil { s.acks[key] = at } else { s.repeated += 1 }
            }
        }
    }

    var accepted: Int { state.withLock { $0.accepted } }

    func ack(_ token: String, _ km: Int) -> Double? { state.withLock { $0.acks["\(token)/\(km)"] } }

    func markDrain(from time: Double) {
        state.withLock {
            $0.drainFrom = time
            $0.first = .infinity
            $0.last = 0
        }
    }

    func drainSpan() -> (Double, Double) {
        state.withLock {
            let span = ($0.first, $0.last)
            $0.drainFrom = .infinity
            return span
        }
    }
}
