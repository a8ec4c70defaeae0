import APIStores
import EventStore
import Foundation
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections

/// `livevisits-bench location [--technicians N] [--connections N] [--duration S] [--changing PERCENT]`: technicians'
/// location fixes over HTTP through a child `livevisits serve --api-only`. N technicians (each with a key of their
/// own) have one `enRoute` visit each, booked with a location; closed-loop clients on `--connections` keep-alive
/// connections post fixes for them in turn, each technician's from one connection with rising `recordedAt`. Two
/// measurements: fixes that change nothing (the technician stays at the visit's distance), then fixes of which
/// `--changing` percent (default 10) move the shown distance by 0.2 km, a `progress` each. For each: fixes/s, p50
/// and p99, events appended, and CPU per fix (the server's, PostgreSQL's); PostgreSQL's per fix that changes
/// nothing is the first measurement's. Beside them, pgbench's single-row insert at the same connections and for
/// as long, in the same run: the machine's own write rate.
struct LocationBenchmark {
    static let summary = "technicians' location fixes over HTTP (most change nothing) vs pgbench's insert"
    var technicians = 5000
    var connections = 64
    var duration = 10
    var changing = 10

    static let syntax = CommandSyntax(
        command: "livevisits-bench location", summary: summary,
        options: [
            .value("--technicians", "N", "technicians, one enRoute visit each (default 5000)"),
            .value("--connections", "N", "keep-alive client connections (default 64)"),
            .value("--duration", "SECONDS", "seconds per measurement (default 10)"),
            .value("--changing", "PERCENT", "fixes that change the shown distance in the mixed measurement (default 10)"),
        ],
        details: "Needs LIVEVISITS_DATABASE_URL (the scripts/pg cluster), pgbench and a built livevisits next to this binary.")

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        technicians = try parsed.integer("--technicians", in: 1...1_000_000) ?? technicians
        connections = try parsed.integer("--connections", in: 1...4096) ?? connections
        duration = try parsed.integer("--duration", in: 1...3600) ?? duration
        changing = try parsed.integer("--changing", in: 0...100) ?? changing
        guard connections <= technicians else { throw Self.syntax.mistake("--connections must not exceed --technicians") }
    }

    /// Where every visit is, and the distance it is booked at (the technicians start there).
    static let home = (latitude: 51.5, longitude: -0.12)
    static let bookedKilometres = 10.0

    /// The point `kilometres` due north of `home`: its great-circle distance from `home` is `kilometres`.
    static func north(_ kilometres: Double) -> (latitude: Double, longitude: Double) {
        (home.latitude + kilometres / (ServiceLocation.earthRadiusKilometres * Double.pi / 180), home.longitude)
    }

    func run() async throws {
        let serverURL = try BenchmarkEnvironment.serverURL()
        let pgbenchPath = "/usr/lib/postgresql/15/bin/pgbench"
        guard FileManager.default.isExecutableFile(atPath: pgbenchPath) else {
            throw BenchmarkUsageError(message: "pgbench is not installed (postgresql-15)")
        }
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let executable = try BenchmarkEnvironment.livevisits()
        try await ScratchDatabase.with(serverURL: serverURL, migrations: root.appendingPathComponent("Migrations")) { database in
            let keys = try await prepare(database: database, root: root)
            guard let port = LoopbackPort.bindable() else { throw BenchmarkUsageError(message: "cannot find a free port") }
            var environment = ProcessInfo.processInfo.environment
            environment["LIVEVISITS_DATABASE_URL"] = database.url
            environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:\(port)"
            environment["LIVEVISITS_HTTP_MAX_CONNECTIONS_PER_IP"] = "0"
            environment["LIVEVISITS_PROJECTIONS_DIR"] = root.appendingPathComponent("Projections").path
            environment["LIVEVISITS_MIGRATIONS_DIR"] = root.appendingPathComponent("Migrations").path
            environment["LIVEVISITS_LOG_LEVEL"] = "warning"
            // Each technician has a key of their own; a small run (few technicians, many fixes each) would pass
            // the per-key rate limit that a fleet posting every few seconds stays far below: on, but far above it.
            if environment["LIVEVISITS_RATE_LIMIT"] == nil { environment["LIVEVISITS_RATE_LIMIT"] = "1000000" }
            let server = try ChildProcess(executable.path, ["serve", "--api-only"], environment: environment).start(
                stderr: .inherit)
            defer {
                if server.isRunning {
                    server.signal(SIGTERM)
                    _ = server.waitBlocking()
                }
            }
            let helpers = try APIBenchmark(arguments: [])
            try await helpers.waitForHealth(port: port, server: server)
            try await warmUp(port: port, keys: keys)
            // This cluster's processes only: other clusters on the machine (tests) are not counted.
            let postmaster = try await PipelineBenchmark.postmaster(url: database.url)
            try await database.settle()
            print(
                "\(technicians) technicians, one enRoute visit each; \(connections) connections, \(duration) s per measurement")
            print("measurement        fixes/s   p50 ms   p99 ms   events  server µs/fix  PostgreSQL µs/fix")
            let quiet = try await measure(
                port: port, server: server, postmaster: postmaster, keys: keys, changing: 0, database: database)
            try await database.settle()
            let mixed = try await measure(
                port: port, server: server, postmaster: postmaster, keys: keys, changing: changing, database: database)

            let pgbench = PgBench(path: pgbenchPath, url: database.url, streams: 10_000)
            try await pgbench.prepare(eventData: AppendBenchmark.eventData)
            try await database.settle()
            let tps = try pgbench.run(.insert, clients: connections, seconds: Double(duration))
            print(String(format: "pgbench single-row insert, %d clients: %.0f tps", connections, tps))
            print(
                String(
                    format:
                        "PostgreSQL per fix that changes nothing: %.1f µs; fixes/s with %d %% changing: %.0f (%.2f× pgbench's insert), p99 %.1f ms",
                    quiet.postgresMicroseconds, changing, mixed.perSecond, mixed.perSecond / max(tps, 1), mixed.p99))
        }
    }

    /// Keys and visits: one technician key each (minted in the database), one visit each booked with a location
    /// and put `enRoute` through the command path (sealed as the API seals them), before the server starts.
    func prepare(database: ScratchDatabase, root: URL) async throws -> [String] {
        print("booking \(technicians) visits in \(database.name) …")
        let projections = root.appendingPathComponent("Projections")
        let rules = try ProjectionRules.load(directory: projections)
        let readModel = try VisitReadModel(projectionsDirectory: projections, rules: rules)
        return try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 8)) { pool in
            let handler = VisitCommandHandler(
                store: EventStore(pool: pool), readModel: readModel, pushes: OutboxPushes(outbox: Outbox(pool: pool)),
                personalData: PersonalDataKeys(current: nil))
            let context = VisitCommandContext(actor: EventMetadata(actorRole: "dispatcher", actorSubject: "bench"))
            let start = Int(Date().timeIntervalSince1970) + 900
            let count = technicians
            let keys = KeyList(count: count)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        for t in stride(from: lane, to: count, by: 8) {
                            let body = """
                                {"visitId":"loc-\(t)","customerId":"c-\(t)",\
                                "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},\
                                "technician":{"id":"t-\(t)","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
                                "arrivalWindow":{"start":\(start),"end":\(start + 600)},"kilometresAway":\(Self.bookedKilometres),\
                                "location":{"latitude":\(Self.home.latitude),"longitude":\(Self.home.longitude)}}
                                """
                            _ = try await handler.schedule(
                                try ScheduleVisitRequest.parse(Array(body.utf8)) { "loc-\(t)" }, context: context)
                            _ = try await handler.post(visitId: "loc-\(t)", event: .enRoute(.none), context: context)
                            let key = try await pool.withConnection {
                                try APIKeys.mint(role: .technician, subject: "t-\(t)", createdBy: nil, on: $0).key
                            }
                            keys.set(t, key)
                        }
                    }
                }
                try await group.waitForAll()
            }
            return keys.values
        }
    }

    /// One fix per technician, untimed: the server's board loaded, every key in its cache.
    func warmUp(port: UInt16, keys: [String]) async throws {
        let clients = (0..<connections).map { c in
            FixClient(technicians: Array(stride(from: c, to: keys.count, by: connections)), keys: keys, rounds: 1, changing: 0)
        }
        try await LoadLoop.run(port: port, clients: clients)
        let failed = clients.reduce(0) { $0 + $1.failures }
        guard failed == 0 else { throw BenchmarkUsageError(message: "\(failed) warm-up fixes failed") }
    }

    struct Figures {
        var perSecond: Double
        var p99: Double
        var postgresMicroseconds: Double
    }

    /// One measurement: closed-loop clients for `duration` seconds.
    func measure(
        port: UInt16, server: RunningChild, postmaster: Int32, keys: [String], changing: Int, database: ScratchDatabase
    ) async throws -> Figures {
        let eventsBefore = try await database.integer("SELECT count(*)::int AS n FROM events")
        let deadline = LoadConnection.now() + Double(duration)
        let clients = (0..<connections).map { c in
            FixClient(
                technicians: Array(stride(from: c, to: keys.count, by: connections)), keys: keys, rounds: nil, changing: changing,
                until: deadline)
        }
        let serverBefore = CPUSample.seconds(pid: server.pid)
        let postgresBefore = CPUSample.clusterSeconds(postmaster: postmaster)
        let started = LoadConnection.now()
        try await LoadLoop.run(port: port, clients: clients)
        let seconds = LoadConnection.now() - started
        let serverCPU = CPUSample.seconds(pid: server.pid) - serverBefore
        let postgresCPU = CPUSample.clusterSeconds(postmaster: postmaster) - postgresBefore
        let failures = clients.reduce(0) { $0 + $1.failures }
        guard failures == 0 else { throw BenchmarkUsageError(message: "\(failures) fixes were not answered 202") }
        let latencies = clients.flatMap(\.latencies).sorted()
        let fixes = latencies.count
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(p * Double(latencies.count)))] * 1000
        }
        let events = try await database.integer("SELECT count(*)::int AS n FROM events") - eventsBefore
        let name = changing == 0 ? "no change" : "\(changing) % changing"
        let figures = Figures(
            perSecond: Double(fixes) / seconds, p99: percentile(0.99),
            postgresMicroseconds: postgresCPU * 1e6 / Double(max(fixes, 1)))
        print(
            name.padding(toLength: 17, withPad: " ", startingAt: 0)
                + String(
                    format: " %8.0f %8.2f %8.2f %8d %14.1f %18.1f", figures.perSecond, percentile(0.5), figures.p99, events,
                    serverCPU * 1e6 / Double(max(fixes, 1)), figures.postgresMicroseconds))
        return figures
    }
}

/// Keys minted by concurrent set-up lanes, by index (the technicians' keys, filled by the booking lanes).
final class KeyList: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var keys: [String]

    init(count: Int) { keys = Array(repeating: "", count: count) }

    func set(_ index: Int, _ key: String) {
        lock.lock()
        keys[index] = key
        lock.unlock()
    }

    var values: [String] {
        lock.lock()
        defer { lock.unlock() }
        return keys
    }
}

/// One connection's fixes: its technicians in turn, each at the distance its visit shows (a fix that changes
/// nothing) except every `100 / changing`-th, which moves it 0.2 km (a `progress`). `recordedAt` rises with
/// every fix of the connection, so each technician's rise too.
private final class FixClient: LoadClient {
    let technicians: [Int]
    let keys: [String]
    let rounds: Int?
    let changing: Int
    let until: Double
    var sent = 0
    var failures = 0
    var latencies: [Double] = []
    private var startedAt = 0.0
    /// Each technician's shown distance in tenths (all start at the booked distance).
    private var tenths: [Int: Int] = [:]

    init(technicians: [Int], keys: [String], rounds: Int?, changing: Int, until: Double = .infinity) {
        self.technicians = technicians
        self.keys = keys
        self.rounds = rounds
        self.changing = changing
        self.until = until
        latencies.reserveCapacity(1 << 16)
    }

    func next() -> [UInt8]? {
        if let rounds, sent >= rounds * technicians.count { return nil }
        let now = LoadConnection.now()
        if now >= until { return nil }
        let t = technicians[sent % technicians.count]
        let booked = Int(LocationBenchmark.bookedKilometres * 10)
        var shown = tenths[t] ?? booked
        // Every n-th fix moves the technician: 0.2 km nearer, or back (it stays far outside the nearby radius).
        if changing > 0, sent % max(1, 100 / changing) == 0 {
            shown = shown == booked ? booked - 2 : booked
            tenths[t] = shown
        }
        sent += 1
        let point = LocationBenchmark.north(Double(shown) / 10)
        let body =
            "{\"latitude\":\(point.latitude),\"longitude\":\(point.longitude),\"accuracyMetres\":8,\"recordedAt\":\(now)}"
        startedAt = now
        return LoadConnection.request("POST", "/v1/technicians/t-\(t)/location", key: keys[t], body: body)
    }

    func answered(status: Int, body: [UInt8]) {
        if status != 202 { failures += 1 }
        latencies.append(LoadConnection.now() - startedAt)
    }
}
