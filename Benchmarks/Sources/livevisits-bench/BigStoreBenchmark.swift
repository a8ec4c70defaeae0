import Foundation
import HTTPServer
import PersonalData
import Postgres
import Retention
import Runtime
import Synchronization
import VisitProjections

/// `livevisits-bench big-store`: the API's routes on a year-sized store (`seed`, or one kept by it) side by
/// side with a small fresh one in the same run, each through the API's handler in-process (routing,
/// authentication, the read or the command's transaction, the opening of sealed fields; no HTTP): append,
/// `GET /v1/visits/{id}`, the lists, a history, a visit's pushes — p99 and its ratio to the fresh store's.
/// Then on the big store the product's replay over the whole log (events/s), and a prune of its month of
/// pushes (`Prune`, the clock a month on) with appends beside it: how long a prune transaction stayed open
/// (row and table locks last no longer), the longest any lock was waited for, append p99 beside vs without.
struct BigStoreBenchmark {
    static let summary = "routes' p99 on a seeded year-sized store vs a fresh one, replay over it, prune beside appends"
    var events = 10_000_000
    var visits = 500_000
    var database: String?
    var keyFile: String?
    var seconds = 10.0
    var callers = 4
    var rounds = 3
    var freshVisits = 2_000
    var keep = false

    static let syntax = CommandSyntax(
        command: "livevisits-bench big-store", summary: summary,
        options: [
            .value("--events", "N", "events of the store seeded for the run (default 10000000)"),
            .value("--visits", "N", "its visits (default 500000; with --database: the seeded store's)"),
            .value("--database", "NAME", "measure a store `seed` kept instead of seeding one (with --key-file)"),
            .value("--key-file", "PATH", "that store's key file (printed by seed)"),
            .value("--seconds", "S", "seconds per route and side, and for appends without prune (default 10)"),
            .value("--callers", "N", "concurrent callers (default 4)"),
            .value("--rounds", "N", "fresh/year alternations per route; the median of each side's p99 is compared (default 3)"),
            .value("--fresh-visits", "N", "visits of the fresh store, 20 events each (default 2000)"),
            .flag("--keep", "keep the databases this run seeded"),
        ],
        details: "Needs LIVEVISITS_DATABASE_URL. Targets: each p99 within 1.5x the fresh store's; replay >= 150,000 events/s; "
            + "no prune transaction or lock wait over 100 ms; append p99 during prune within 1.5x of without.")

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        events = try parsed.integer("--events", in: 1...Int.max) ?? events
        visits = try parsed.integer("--visits", in: 1...Int.max) ?? visits
        database = parsed.value("--database")
        keyFile = parsed.value("--key-file")
        if (database == nil) != (keyFile == nil) { throw Self.syntax.mistake("--database and --key-file go together") }
        if database == nil && events < visits * 3 { throw Self.syntax.mistake("--events must be at least 3 × --visits") }
        seconds = try parsed.positiveNumber("--seconds") ?? seconds
        callers = try parsed.integer("--callers", in: 1...256) ?? callers
        rounds = try parsed.integer("--rounds", in: 1...100) ?? rounds
        freshVisits = try parsed.integer("--fresh-visits", in: 10...Int.max) ?? freshVisits
        keep = parsed.has("--keep")
    }

    func run() async throws {
        let server = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let migrations = root.appendingPathComponent("Migrations")
        let readModel = try SeededStore.readModel(root: root)
        print("load average at start \(ReplayBenchmark.loadAverage())")
        var made: [(ScratchDatabase, String)] = []
        defer {
            if !keep { for (_, key) in made { try? FileManager.default.removeItem(atPath: key) } }
        }
        do {
            let big: SeededStore
            if let database, let keyFile {
                let key = try WrappingKey.load(path: keyFile, origin: "--key-file")
                big = SeededStore(
                    url: ScratchDatabase.url(server, database: database), personalData: PersonalDataKeys(current: key),
                    seed: StoreSeed(events: events, visits: visits, now: Int(Date().timeIntervalSince1970)))
            } else {
                let scratch = try await ScratchDatabase.create(serverURL: server, migrations: migrations)
                made.append((scratch, SeededStore.keyPath(database: scratch.name)))
                big = try await SeededStore.load(
                    database: scratch, keyPath: made[0].1, events: events, visits: visits, root: root)
            }
            let scratch = try await ScratchDatabase.create(serverURL: server, migrations: migrations)
            made.append((scratch, SeededStore.keyPath(database: scratch.name)))
            print("fresh store:")
            let fresh = try await SeededStore.load(
                database: scratch, keyPath: made.last!.1, events: freshVisits * 20, visits: freshVisits, root: root)
            try await measure(big: big, fresh: fresh, readModel: readModel)
        } catch {
            if !keep { for (database, _) in made { await database.drop() } }
            throw error
        }
        if keep {
            for (database, key) in made { print("kept database \(database.name) (key file \(key))") }
        } else {
            for (database, _) in made { await database.drop() }
        }
    }

    /// The figures of one route on one store.
    struct Timing {
        var count = 0
        var seconds = 0.0
        var p50 = 0.0
        var p99 = 0.0
        var perSecond: Double { seconds > 0 ? Double(count) / seconds : 0 }

        /// The round with the median p99 (a burst of load from elsewhere lands in one round, not in the figure).
        static func median(_ rounds: [Timing]) -> Timing { rounds.sorted { $0.p99 < $1.p99 }[rounds.count / 2] }
    }

    private func measure(big: SeededStore, fresh: SeededStore, readModel: VisitReadModel) async throws {
        let size = callers + 4
        try await PostgresPool.withPool(PostgresConfiguration(url: big.url, size: size)) { bigPool in
            try await PostgresPool.withPool(PostgresConfiguration(url: fresh.url, size: size)) { freshPool in
                let apis = (
                    fresh: try await SeededStore.api(pool: freshPool, readModel: readModel, personalData: fresh.personalData),
                    big: try await SeededStore.api(pool: bigPool, readModel: readModel, personalData: big.personalData)
                )
                for api in [apis.fresh, apis.big] { try await Self.scheduleAppendVisits(api) }
                let routes = Self.routes
                print("")
                print(
                    "route              fresh: req/s   p50 ms   p99 ms |  year: req/s   p50 ms   p99 ms | p99 year/fresh (<= 1.5)"
                )
                print("  (each side the round of median p99 among \(rounds), \(callers) callers, \(seconds) s a round)")
                for route in routes {
                    var (smalls, larges) = ([Timing](), [Timing]())
                    for _ in 0..<rounds {
                        smalls.append(try await time(apis.fresh, seconds: seconds) { route.request(&$0, fresh.seed) })
                        larges.append(try await time(apis.big, seconds: seconds) { route.request(&$0, big.seed) })
                    }
                    let (small, large) = (Timing.median(smalls), Timing.median(larges))
                    print(
                        String(
                            format: "%@ %12.0f %8.2f %8.2f | %12.0f %8.2f %8.2f | %.2f%@",
                            route.name.padding(toLength: 18, withPad: " ", startingAt: 0), small.perSecond,
                            small.p50 * 1e3, small.p99 * 1e3, large.perSecond, large.p50 * 1e3, large.p99 * 1e3,
                            large.p99 / small.p99, large.p99 / small.p99 <= 1.5 ? "" : "  MISSED"))
                }
                print("  load average \(ReplayBenchmark.loadAverage())")
                print("")

                let replay = try await VisitReplay(pool: bigPool, readModel: readModel).run()
                print(
                    String(
                        format:
                            "replay visits over the year: %d events, %d visits in %.1f s = %.0f events/s (target >= 150000: %.2fx); "
                            + "stages %.1f s, indexes %.1f s, swap %.2f s; load average %@",
                        replay.events, replay.visits, replay.seconds, replay.eventsPerSecond, replay.eventsPerSecond / 150_000,
                        replay.stagesSeconds, replay.indexSeconds, replay.swapSeconds, ReplayBenchmark.loadAverage()))
                print("")
                try await prune(big: big, pool: bigPool, api: apis.big)
            }
        }
    }

    /// A route and how a caller makes its next request.
    struct Route: Sendable {
        let name: String
        let request: @Sendable (inout SystemRandomNumberGenerator, StoreSeed) -> (HTTPMethod, String, String?)
    }

    static let appendVisits = 50

    static let routes: [Route] = [
        Route(name: "append (POST)") { random, _ in
            let km = Double(Int.random(in: 1...900, using: &random)) / 100
            return (
                .post, "/v1/visits/append-\(Int.random(in: 0..<appendVisits, using: &random))/events",
                #"{"type": "progress", "kilometresAway": \#(km)}"#
            )
        },
        Route(name: "GET visit") { random, seed in
            (.get, "/v1/visits/\(StoreSeed.visitId(.random(in: 0..<seed.visits, using: &random)))", nil)
        },
        Route(name: "list (customer)") { random, seed in
            (.get, "/v1/visits?customerId=c\(Int.random(in: 0..<seed.customers, using: &random))&limit=50", nil)
        },
        Route(name: "list (technician)") { random, seed in
            (.get, "/v1/visits?technicianId=t\(Int.random(in: 0..<seed.technicians, using: &random))&limit=50", nil)
        },
        Route(name: "list (all, active)") { _, _ in (.get, "/v1/visits?status=active&limit=50", nil) },
        Route(name: "history") { random, seed in
            (.get, "/v1/visits/\(StoreSeed.visitId(.random(in: 0..<seed.visits, using: &random)))/events", nil)
        },
        Route(name: "deliveries") { random, seed in
            // Visits of the last month before today with a Live Activity (one in five): their pushes.
            let (since, until) = (seed.visits - max(2, seed.visits * 30 / 365), seed.visits - max(1, seed.visits * 2 / 365))
            let i = Int.random(in: since..<until, using: &random) / 5 * 5 + 1
            return (.get, "/v1/visits/\(StoreSeed.visitId(min(i, seed.visits - 1)))/deliveries", nil)
        },
    ]

    /// Visits under way that the append route posts progress to.
    static func scheduleAppendVisits(_ api: SeededAPI) async throws {
        let start = Int(Date().timeIntervalSince1970) + 3_600
        for k in 0..<appendVisits {
            let body = """
                {"visitId": "append-\(k)", "customerId": "c\(k)",
                 "attributes": {"customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"},
                 "technician": {"id": "t-append", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"},
                 "arrivalWindow": {"start": \(start), "end": \(start + 3_600)}, "kilometresAway": 14.0}
                """
            for (path, body) in [
                ("/v1/visits", body), ("/v1/visits/append-\(k)/events", #"{"type": "enRoute", "kilometresAway": 12}"#),
            ] {
                let response = await api.handler(api.request(.post, path, body: body))
                guard (200..<300).contains(response.status) else {
                    throw BenchmarkUsageError(message: "POST \(path) answered \(response.status)")
                }
            }
        }
    }

    /// `callers` tasks sending `next` requests through `api` until `stop` says so (after `seconds` by
    /// default); any answer but 2xx stops the run with an error naming it.
    private func time(
        _ api: SeededAPI, seconds: Double, stop: (@Sendable () -> Bool)? = nil,
        _ next: @escaping @Sendable (inout SystemRandomNumberGenerator) -> (HTTPMethod, String, String?)
    ) async throws -> Timing {
        let started = DispatchTime.now().uptimeNanoseconds
        let done: @Sendable () -> Bool = stop ?? { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 >= seconds }
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<callers {
                group.addTask {
                    var random = SystemRandomNumberGenerator()
                    var mine: [Double] = []
                    while !done() {
                        let (method, path, body) = next(&random)
                        let t = DispatchTime.now().uptimeNanoseconds
                        let response = await api.handler(api.request(method, path, body: body))
                        mine.append(Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9)
                        guard (200..<300).contains(response.status) else {
                            throw BenchmarkUsageError(
                                message:
                                    "\(method) \(path) answered \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))"
                            )
                        }
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }.sorted()
        var timing = Timing()
        timing.count = latencies.count
        timing.seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        if !latencies.isEmpty {
            timing.p50 = latencies[latencies.count / 2]
            timing.p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
        }
        return timing
    }

    /// The prune of the big store's month of pushes (the retention rules with the clock a month on), appends
    /// through the API beside it, and a sampler on a connection of its own every 10 ms: the age of the prune's
    /// open transaction (its row and table locks are held no longer) and the longest wait of any lock
    /// (`pg_locks.waitstart`).
    private func prune(big: SeededStore, pool: PostgresPool, api: SeededAPI) async throws {
        let append = Self.routes[0]
        let alone = try await time(api, seconds: seconds) { append.request(&$0, big.seed) }
        let pruneURL = ScratchDatabase.url(big.url, adding: "application_name=lvbench-prune")
        let watch = PruneWatch()
        let (report, beside, held) = try await PostgresPool.withPool(PostgresConfiguration(url: pruneURL, size: 1)) { prunePool in
            try await PostgresPool.withPool(PostgresConfiguration(url: big.url, size: 1)) { samplerPool in
                let sampler = Task { () async throws -> Void in
                    try await samplerPool.withConnection { c in
                        while !watch.done.withLock({ $0 }) {
                            let row = try c.query(
                                """
                                SELECT coalesce(max(extract(epoch FROM clock_timestamp() - xact_start))
                                                FILTER (WHERE application_name = 'lvbench-prune' AND state <> 'idle'), 0) AS prune,
                                       (SELECT coalesce(max(extract(epoch FROM clock_timestamp() - waitstart)), 0)
                                        FROM pg_locks WHERE NOT granted) AS wait
                                FROM pg_stat_activity
                                """
                            ).first
                            let (p, w) = (Double(row?["prune"] ?? "0") ?? 0, Double(row?["wait"] ?? "0") ?? 0)
                            watch.held.withLock { $0 = (max($0.transaction, p), max($0.lockWait, w), $0.samples + 1) }
                            usleep(10_000)
                        }
                    }
                }
                let clock = ManualClock(now: Date().timeIntervalSince1970 + 31 * 86_400)
                let prune = Task { () -> Prune.Report in
                    defer { watch.done.withLock { $0 = true } }
                    watch.lastBatch.withLock { $0 = DispatchTime.now().uptimeNanoseconds }
                    return try await Prune(pool: prunePool, clock: clock, metrics: Metrics()).run { rule, _ in
                        let now = DispatchTime.now().uptimeNanoseconds
                        let last = watch.lastBatch.withLock { last in
                            defer { last = now }
                            return last
                        }
                        let took = Double(now - last) / 1e9
                        watch.longestBatch.withLock { $0[rule] = max($0[rule] ?? 0, took) }
                    }
                }
                let beside = try await time(api, seconds: 0, stop: { watch.done.withLock { $0 } }) {
                    append.request(&$0, big.seed)
                }
                let report = try await prune.value
                try await sampler.value
                return (report, beside, watch.held.withLock { $0 })
            }
        }
        let removed = report.removed.reduce(0) { $0 + $1.rows }
        for line in report.lines { print("  " + line) }
        for (rule, took) in watch.longestBatch.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            print(String(format: "  longest batch of %@: %.1f ms (the client's view: round trip included)", rule, took * 1e3))
        }
        print(
            String(
                format: "prune of a month: %d rows in %.1f s = %.0f rows/s (%d batches); longest prune transaction %.1f ms, "
                    + "longest lock wait %.1f ms (%d samples; target < 100 ms)%@",
                removed, report.seconds, Double(removed) / max(report.seconds, 1e-9), report.batches, held.transaction * 1e3,
                held.lockWait * 1e3, held.samples, max(held.transaction, held.lockWait) < 0.1 ? "" : "  MISSED"))
        print(
            String(
                format: "append beside prune: %d in %.1f s, p50 %.2f ms, p99 %.2f ms; without: p50 %.2f ms, p99 %.2f ms; "
                    + "p99 during/without %.2f (target <= 1.5)%@; load average %@",
                beside.count, beside.seconds, beside.p50 * 1e3, beside.p99 * 1e3, alone.p50 * 1e3, alone.p99 * 1e3,
                beside.p99 / alone.p99, beside.p99 / alone.p99 <= 1.5 ? "" : "  MISSED", ReplayBenchmark.loadAverage()))
    }
}

/// What `big-store`'s lock sampler saw while a prune ran, and whether the prune is done.
final class PruneWatch: Sendable {
    let done = Mutex(false)
    /// The oldest prune transaction and the longest lock wait seen (seconds), and how many samples.
    let held = Mutex((transaction: 0.0, lockWait: 0.0, samples: 0))
    /// When the last batch ended (uptime nanoseconds), and each rule's longest batch (seconds).
    let lastBatch = Mutex(UInt64(0))
    let longestBatch = Mutex([String: Double]())
}
