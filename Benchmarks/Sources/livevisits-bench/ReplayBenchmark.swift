import EventStore
import Foundation
import Postgres
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections

/// `livevisits-bench replay [--events N] [--keep]`: generates a log of N visit events (10 per visit, a
/// whole journey each, made by the real command path once and cloned in SQL), then rebuilds the visit
/// read model with `VisitReplay` (what `livevisits replay visits` runs) and prints events/s.
struct ReplayBenchmark {
    static let summary = "generate a visit log (default 1,000,000 events) and time `replay visits` over it"
    var events = 1_000_000
    var keep = false

    static let syntax = CommandSyntax(
        command: "livevisits-bench replay", summary: summary,
        options: [
            .value("--events", "N", "events in the generated log, at least 10 (default 1000000)"),
            .flag("--keep", "keep the scratch database"),
        ],
        details: "Needs LIVEVISITS_DATABASE_URL.")

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        events = try parsed.integer("--events", in: 10...Int.max) ?? events
        keep = parsed.has("--keep")
    }

    static let journey = [
        #"{"type": "enRoute", "kilometresAway": 12}"#,
        #"{"type": "progress", "kilometresAway": 9.5}"#,
        #"{"type": "progress", "kilometresAway": 6.25}"#,
        #"{"type": "progress", "kilometresAway": 3}"#,
        #"{"type": "nearby", "kilometresAway": 1.2}"#,
        #"{"type": "onSite"}"#,
        #"{"type": "finishing"}"#,
        #"{"type": "progress", "kilometresAway": 0}"#,
        #"{"type": "completed"}"#,
    ]

    /// The machine's 1-minute load average (`/proc/loadavg`): how shared the cores were.
    static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
    }

    func run() async throws {
        let server = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let database = try await ScratchDatabase.create(serverURL: server, migrations: root.appendingPathComponent("Migrations"))
        try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 4)) { pool in
            let projections = root.appendingPathComponent("Projections")
            let rules = try ProjectionRules.load(directory: projections)
            let readModel = try VisitReadModel(projectionsDirectory: projections, rules: rules)

            // One real visit through the command path: the template every cloned visit copies.
            let clock = ManualClock(now: Date().timeIntervalSince1970)
            let handler = VisitCommandHandler(
                store: EventStore(pool: pool), readModel: readModel, pushes: NoPushes(), clock: clock)
            let start = Int(clock.now()) + 900
            let schedule = """
                {"visitId": "TEMPLATE", "customerId": "c-TEMPLATE",
                 "attributes": {"customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"},
                 "technician": {"id": "t-1", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van, blue stripe"},
                 "arrivalWindow": {"start": \(start), "end": \(start + 600)}, "kilometresAway": 14.0}
                """
            let context = VisitCommandContext(actor: EventMetadata(actorRole: "dispatcher", actorSubject: "bench"))
            _ = try await handler.schedule(try ScheduleVisitRequest.parse(Array(schedule.utf8)) { "TEMPLATE" }, context: context)
            for step in ReplayBenchmark.journey {
                clock.advance(by: 30)
                _ = try await handler.post(
                    visitId: "TEMPLATE", event: try VisitEventRequest.parse(Array(step.utf8)), context: context)
            }
            let visits = events / 10
            print("generating \(visits * 10) events over \(visits) visits in \(database.name) …")
            let generateStarted = Date()
            let chunk = 20_000
            var from = 1
            while from <= visits {
                let to = min(from + chunk - 1, visits)
                try await pool.query(
                    """
                    INSERT INTO events (stream_name, position, type, data, metadata, recorded_at)
                    SELECT 'visit-b' || v, t.position, t.type, replace(t.data::text, 'TEMPLATE', 'b' || v)::jsonb, t.metadata,
                           t.recorded_at + make_interval(secs => v)
                    FROM generate_series(\(from)::int, \(to)::int) AS v, (SELECT * FROM events WHERE stream_name = 'visit-TEMPLATE') AS t
                    ORDER BY v, t.position
                    """)
                from = to + 1
            }
            try await pool.withConnection { try $0.execute(script: "ANALYZE events") }
            let total = try await pool.query("SELECT count(*) AS n FROM events").first!.int("n")
            print(String(format: "generated %d events in %.1f s", total, Date().timeIntervalSince(generateStarted)))

            let backend = try await pool.query("SELECT pg_backend_pid() AS pid").first!.int("pid")
            let postmaster = CPUSample.postmaster(ofBackend: Int32(backend)) ?? 0
            let cpuBefore = (ours: CPUSample.thisProcess(), postgres: CPUSample.clusterSeconds(postmaster: postmaster))
            let report = try await VisitReplay(pool: pool, readModel: readModel).run { progress in
                print(
                    "  replay visits: \(progress.events) events, \(progress.visits) visits, \(Int(progress.eventsPerSecond)) events/s"
                )
            }
            let cpu = (
                ours: CPUSample.thisProcess() - cpuBefore.ours,
                postgres: CPUSample.clusterSeconds(postmaster: postmaster) - cpuBefore.postgres
            )
            let rows = try await pool.query("SELECT count(*) AS n FROM visits").first!.int("n")
            print(
                String(
                    format:
                        "  busy per stage (overlapped): read %.2f s, fold %.2f s, encode %.2f s, write %.2f s; "
                        + "wall: stages %.2f s, indexes %.2f s, swap %.2f s",
                    report.readSeconds, report.foldSeconds, report.encodeSeconds, report.writeSeconds,
                    report.stagesSeconds, report.indexSeconds, report.swapSeconds))
            print(
                String(
                    format: "replay visits: %d events, %d visits (%d rows) in %.2f s = %.0f events/s",
                    report.events, report.visits, rows, report.seconds, report.eventsPerSecond))
            let perEvent = 1e6 / Double(max(report.events, 1))
            print(
                String(
                    format: "  CPU: ours %.2f s (%.2f µs/event), PostgreSQL %.2f s (%.2f µs/event); load average %@",
                    cpu.ours, cpu.ours * perEvent, cpu.postgres, cpu.postgres * perEvent, ReplayBenchmark.loadAverage()))
        }
        if keep {
            print("kept database \(database.name): LIVEVISITS_DATABASE_URL='\(database.url)' livevisits replay")
        } else {
            await database.drop()
        }
    }
}
