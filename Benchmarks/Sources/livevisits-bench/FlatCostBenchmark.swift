import APIStores
import Foundation
import Postgres
import Runtime

/// `livevisits-bench flat-cost`: what an accepted event costs PostgreSQL on visits outside every cache of the
/// API process, against the hot path, as the store grows — by active visits and by visits per customer — with
/// pgbench's single-row insert measured in the same run as the reference.
///
/// Per size (visits) and visits per customer: a scratch database, one `serve --api-only` (no worker: the outbox
/// fills, as it does while APNs or the workers are down), each visit booked for its customer with one Live
/// Activity registered by that customer's key (untimed). Then the tables are vacuumed and checkpointed and the
/// API process restarted, so that no state, data key or API key is in its caches; its connections are warmed
/// on visits of their own (each plans its statements once), and:
/// - **cold**: `--connections` clients post one `progress` to each visit, every visit once;
/// - **hot**: the same clients post `progress` round and round to `--hot-visits` visits for `--hot-seconds`
///   (after one untimed round, so their states are the process's own).
/// Each phase prints events/s, HTTP p50/p99, and CPU per event of the API process and of this cluster's
/// PostgreSQL; the ratios are cold/hot of PostgreSQL's CPU per event and cold events/s against pgbench.
struct FlatCostBenchmark {
    static let summary =
        "PostgreSQL µs per event on visits outside every cache vs the hot path, by visits and visits per customer, vs pgbench"
    var visits = [1_000, 10_000, 60_000]
    var perCustomer = [1, 100, 1_000]
    var connections = 64
    var hotVisits = 640
    var hotSeconds = 5.0
    var runPgbench = true
    var keep = false
    var settle = true
    var statements = false
    var pgbenchPath = "/usr/lib/postgresql/15/bin/pgbench"

    static let syntax = CommandSyntax(
        command: "livevisits-bench flat-cost", summary: summary,
        options: [
            .value("--visits", "LIST", "active visits per measurement (default 1000,10000,60000)"),
            .value("--per-customer", "LIST", "visits per customer (default 1,100,1000; those above the visits are skipped)"),
            .value("--connections", "N", "client connections (default 64)"),
            .value("--hot-visits", "N", "visits of the hot phase (default 640)"),
            .value("--hot-seconds", "N", "seconds of the hot phase (default 5)"),
            .flag("--no-pgbench", "skip pgbench"),
            .flag(
                "--no-settle",
                "go on from the set-up as it left the tables and the API process: no VACUUM (ANALYZE), CHECKPOINT or restart"),
            .flag(
                "--statements",
                "after each phase, its costliest statements by pg_stat_statements (the cluster must preload it; reset before each phase)"
            ),
            .flag("--keep", "keep each measurement's database (its URL is printed) for EXPLAIN and the like"),
            .value("--pgbench", "PATH", "pgbench binary (default /usr/lib/postgresql/15/bin/pgbench)"),
        ],
        details:
            "Needs LIVEVISITS_DATABASE_URL (the scripts/pg cluster), openssl, a built livevisits next to this binary; run from the repository root. The role needs pg_checkpoint or superuser (each measurement starts from VACUUM (ANALYZE) and a CHECKPOINT)."
    )

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        visits = try parsed.integers("--visits", in: 1...1_000_000) ?? visits
        perCustomer = try parsed.integers("--per-customer", in: 1...1_000_000) ?? perCustomer
        connections = try parsed.integer("--connections", in: 1...512) ?? connections
        hotVisits = try parsed.integer("--hot-visits", in: 1...1_000_000) ?? hotVisits
        hotSeconds = try parsed.positiveNumber("--hot-seconds") ?? hotSeconds
        runPgbench = !parsed.has("--no-pgbench")
        keep = parsed.has("--keep")
        settle = !parsed.has("--no-settle")
        statements = parsed.has("--statements")
        pgbenchPath = parsed.value("--pgbench") ?? pgbenchPath
    }

    /// One phase's figures.
    struct Phase {
        var events = 0
        var refused = 0
        var seconds = 0.0
        var p50 = 0.0
        var p99 = 0.0
        var ours = 0.0
        var postgres = 0.0
        /// Commands per group-commit batch (`livevisits_command_batched_total` / `…_batches_total`).
        var commandsPerBatch = 0.0
        var eventsPerSecond: Double { Double(events) / max(seconds, 1e-9) }
        var postgresPerEvent: Double { postgres / Double(max(events, 1)) * 1e6 }
        var oursPerEvent: Double { ours / Double(max(events, 1)) * 1e6 }
    }

    struct Measurement {
        var visits: Int
        var perCustomer: Int
        var cold: Phase
        var hot: Phase
    }

    func run() async throws {
        let serverURL = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let executable = try BenchmarkEnvironment.livevisits()
        let rig = try await ScaleBenchmark.Rig.start(root: root, livevisits: executable.path, recorded: 1)
        defer { Task { await rig.stop() } }
        let postmaster = try await PipelineBenchmark.postmaster(url: serverURL)
        say("load average before: \(PipelineBenchmark.loadAverage())")
        var measurements: [Measurement] = []
        for n in visits {
            for k in perCustomer where k <= n {
                let database = try await ScratchDatabase.create(
                    serverURL: serverURL, migrations: root.appendingPathComponent("Migrations"))
                let m: Measurement
                do {
                    m = try await measure(visits: n, perCustomer: k, database: database, rig: rig, postmaster: postmaster)
                } catch {
                    if !keep { await database.drop() }
                    throw error
                }
                if keep { say("kept: \(database.url)") } else { await database.drop() }
                measurements.append(m)
                say(
                    String(
                        format:
                            "%6d visits, %4d per customer: cold %5.0f events/s, PostgreSQL %4.0f µs/event, %.1f commands/batch; hot %5.0f events/s, %4.0f µs/event, %.1f commands/batch; refused %d",
                        n, k, m.cold.eventsPerSecond, m.cold.postgresPerEvent, m.cold.commandsPerBatch, m.hot.eventsPerSecond,
                        m.hot.postgresPerEvent, m.hot.commandsPerBatch, m.cold.refused + m.hot.refused))
            }
        }
        var pgbenchTPS: Double?
        if runPgbench {
            pgbenchTPS = try await ScratchDatabase.with(
                serverURL: serverURL, migrations: root.appendingPathComponent("Migrations")
            ) {
                let pgbench = PgBench(path: pgbenchPath, url: $0.url, streams: 1000)
                try await pgbench.prepare(eventData: AppendBenchmark.eventData)
                return try pgbench.run(clients: 16, seconds: 5)
            }
        }

        say("")
        say("load average after: \(PipelineBenchmark.loadAverage())")
        say(
            "visits  per customer | cold: events/s  HTTP p50 ms  p99 ms  µs/event ours  PostgreSQL | hot: events/s  p99 ms  µs/event ours  PostgreSQL | PostgreSQL cold/hot  cold/pgbench"
        )
        for m in measurements {
            let reference = pgbenchTPS.map { String(format: "%.2f×", m.cold.eventsPerSecond / $0) } ?? "-"
            say(
                String(
                    format: "%6d  %12d | %14.0f  %11.1f  %6.1f  %13.0f  %10.0f | %13.0f  %6.1f  %13.0f  %10.0f | %18.2f×  %@",
                    m.visits, m.perCustomer, m.cold.eventsPerSecond, m.cold.p50 * 1000, m.cold.p99 * 1000, m.cold.oursPerEvent,
                    m.cold.postgresPerEvent, m.hot.eventsPerSecond, m.hot.p99 * 1000, m.hot.oursPerEvent, m.hot.postgresPerEvent,
                    m.cold.postgresPerEvent / max(m.hot.postgresPerEvent, 1e-9),
                    PipelineBenchmark.rightAligned(reference, 12)))
        }
        if let pgbenchTPS { say(String(format: "pgbench single-row insert, 16 clients: %.0f tps", pgbenchTPS)) }
        say("targets: PostgreSQL cold/hot ≤ 1.5×; cold at 60,000 visits ≥ 0.25× pgbench")
    }

    /// One size: set up, restart the API with empty caches, the cold phase, the hot phase.
    func measure(visits n: Int, perCustomer k: Int, database: ScratchDatabase, rig: ScaleBenchmark.Rig, postmaster: Int32)
        async throws -> Measurement
    {
        let dispatcher = try await rig.dispatcherKey(databaseURL: database.url)
        // Besides the measured visits, `connections` of their own warm the restarted API's connections (each
        // plans its statements once) before the cold phase, so that it measures visits, not a process starting.
        let warm = connections
        let customers = (n + warm + k - 1) / k
        let customerKeys = try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 1)) { pool in
            try await pool.withTransaction { c in
                try (0..<customers).map {
                    try APIKeys.mint(role: .customer, subject: "c-\($0)", createdBy: "bench", on: c).key
                }
            }
        }
        var (server, port) = try await rig.startServer(databaseURL: database.url, arguments: ["serve", "--api-only"])
        do {
            try await setUp(visits: n + warm, perCustomer: k, customerKeys: customerKeys, port: port, dispatcher: dispatcher)
            if settle {
                _ = await server.stop()
                try await database.settle()
                (server, port) = try await rig.startServer(databaseURL: database.url, arguments: ["serve", "--api-only"])
            }
            for _ in 0..<2 {
                _ = try await phase(
                    "connections' warm-up", database: database, port: port, server: server, postmaster: postmaster,
                    { [$0 + n] }, width: warm, dispatcher: dispatcher, until: nil)
            }
            let width = min(connections, n)
            // Cold: every visit once, client i taking visits i, i + width, …: neighbouring requests are on
            // neighbouring visits, so of one customer when it has many.
            let cold = try await phase(
                "cold", database: database, port: port, server: server, postmaster: postmaster,
                { Array(stride(from: $0, to: n, by: width)) }, width: width,
                dispatcher: dispatcher, until: nil)
            let hot = min(hotVisits, n)
            let hotWidth = min(connections, hot)
            let owned: @Sendable (Int) -> [Int] = { Array(stride(from: $0, to: hot, by: hotWidth)) }
            _ = try await phase(
                "warm-up", database: database, port: port, server: server, postmaster: postmaster, owned, width: hotWidth,
                dispatcher: dispatcher, until: nil)
            let warm = try await phase(
                "hot", database: database, port: port, server: server, postmaster: postmaster, owned, width: hotWidth,
                dispatcher: dispatcher,
                until: LoadConnection.now() + hotSeconds)
            _ = await server.stop()
            return Measurement(visits: n, perCustomer: k, cold: cold, hot: warm)
        } catch {
            _ = await server.stop()
            throw error
        }
    }

    /// Books the visits, visit v for customer v / k, and registers a Live Activity for each with its customer's key.
    func setUp(visits n: Int, perCustomer k: Int, customerKeys: [String], port: UInt16, dispatcher: String) async throws {
        let width = min(64, n)
        let now = Int(Date().timeIntervalSince1970)
        let bad = try await LoadConnection.drive(port: port, connections: width) { c, i in
            var bad = 0
            for v in stride(from: i, to: n, by: width) {
                let visit = """
                    {"visitId":"f-\(v)","customerId":"c-\(v / k)","attributes":{"customerFirstName":"Alex",\
                    "serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},"technician":{"id":"t-\(v % 500)",\
                    "name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
                    "arrivalWindow":{"start":\(now + 3600),"end":\(now + 7200)},"kilometresAway":40}
                    """
                if try c.exchange(LoadConnection.request("POST", "/v1/visits", key: dispatcher, body: visit)).status != 201 {
                    bad += 1
                }
                let activity = #"{"pushToken":"\#(PipelineBenchmark.token(v, "f-"))","environment":"sandbox","version":1}"#
                let answer = try c.exchange(
                    LoadConnection.request("PUT", "/v1/visits/f-\(v)/live-activities/a", key: customerKeys[v / k], body: activity)
                )
                if answer.status / 100 != 2 { bad += 1 }
            }
            return bad
        }.reduce(0, +)
        guard bad == 0 else { throw BenchmarkUsageError(message: "\(bad) set-up requests failed") }
    }

    /// `width` clients post `progress` to their visits (`owned(i)`), round and round until `deadline`, or each
    /// visit once without one.
    func phase(
        _ name: String, database: ScratchDatabase, port: UInt16, server: RunningChild, postmaster: Int32,
        _ owned: @escaping @Sendable (Int) -> [Int], width: Int,
        dispatcher: String, until deadline: Double?
    ) async throws -> Phase {
        if statements { try await Self.resetStatements(database) }
        let metricsBefore = try await PipelineBenchmark.metrics(port: port)
        let beforeOurs = CPUSample.seconds(pid: server.pid)
        let beforePostgres = CPUSample.clusterSeconds(postmaster: postmaster)
        // (Each phase its own distances: a phase's first round does not repeat the previous phase's.)
        let salt = Int.random(in: 0..<400)
        let started = LoadConnection.now()
        let answers = try await LoadConnection.drive(port: port, connections: width) { c, i in
            let mine = owned(i)
            var times: [Double] = []
            var refused = 0
            var round = 0
            repeat {
                for v in mine {
                    if let deadline, LoadConnection.now() >= deadline { break }
                    // A distance this visit has not shown: every progress is accepted and changes the visit.
                    let km = Double((round + salt) % 400) / 10 + 0.1 + Double(i % 7) / 100
                    let sent = LoadConnection.now()
                    let status = try c.exchange(
                        LoadConnection.request(
                            "POST", "/v1/visits/f-\(v)/events", key: dispatcher,
                            body: #"{"type":"progress","kilometresAway":\#(km)}"#)
                    ).status
                    if status == 201 { times.append(LoadConnection.now() - sent) } else { refused += 1 }
                }
                round += 1
            } while deadline.map { LoadConnection.now() < $0 } ?? false
            return (times, refused)
        }
        let seconds = LoadConnection.now() - started
        let metricsAfter = try await PipelineBenchmark.metrics(port: port)
        func grown(_ name: String) -> Double { (metricsAfter[name] ?? 0) - (metricsBefore[name] ?? 0) }
        let times = answers.flatMap(\.0).sorted()
        if statements { try await printStatements(name, database, events: times.count) }
        func percentile(_ p: Double) -> Double {
            times.isEmpty ? .nan : times[min(times.count - 1, Int(Double(times.count) * p))]
        }
        return Phase(
            events: times.count, refused: answers.map(\.1).reduce(0, +), seconds: seconds, p50: percentile(0.5),
            p99: percentile(0.99), ours: CPUSample.seconds(pid: server.pid) - beforeOurs,
            postgres: CPUSample.clusterSeconds(postmaster: postmaster) - beforePostgres,
            commandsPerBatch: grown("livevisits_command_batched_total") / max(grown("livevisits_command_batches_total"), 1))
    }

    static func resetStatements(_ database: ScratchDatabase) async throws {
        try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 1)) { pool in
            try await pool.withConnection { c in
                try c.execute(script: "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()")
            }
        }
    }

    /// The phase's costliest statements of this database: calls, time and shared buffers per call and per event.
    func printStatements(_ phase: String, _ database: ScratchDatabase, events: Int) async throws {
        let rows = try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 1)) { pool in
            try await pool.query(
                """
                SELECT calls::bigint AS calls, total_exec_time::float8 AS ms,
                       (shared_blks_hit + shared_blks_read)::bigint AS buffers,
                       left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS query
                FROM pg_stat_statements
                WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                ORDER BY total_exec_time DESC LIMIT 10
                """
            ).rows.map { row in
                (try row.int("calls"), try row.double("ms"), try row.int("buffers"), try row.string("query"))
            }
        }
        say("\(phase): \(events) events; statements by time: calls  µs/call  µs/event  buffers/call  query")
        for (calls, ms, buffers, query) in rows {
            say(
                String(
                    format: "  %7d  %7.0f  %8.1f  %12.0f  %@", calls, ms * 1000 / Double(max(calls, 1)),
                    ms * 1000 / Double(max(events, 1)), Double(buffers) / Double(max(calls, 1)), query))
        }
    }

    /// A line on stdout at once (print buffers when stdout is a pipe).
    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
