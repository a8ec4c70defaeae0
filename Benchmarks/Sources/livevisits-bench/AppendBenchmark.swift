import EventStore
import Foundation
import Outbox
import Postgres
import Runtime
import Synchronization
import VisitCommands
import VisitDomain
import VisitProjections

/// `livevisits-bench append`: the product's write path without HTTP — visit commands (a `progress` event:
/// decided on the visit's state, its event appended at the expected version, the read-model row and the
/// outbox rows written in the same transaction) on many visits (uniform and Zipf-skewed) at several writer
/// counts for a fixed time each, through group commit (`VisitCommandBatcher`, as the API runs them) or one
/// transaction per command (`VisitCommandHandler` alone) — and, with `--mode store`, the event store's own
/// append alone (`EventStore.append`: one event, at its stream's expected version, in one autocommitted
/// statement; streams of their own). It prints events/s and p50/p99 latency, and in the same run measures the
/// machine's own limit with `pgbench` inserting one ~200-byte row into a copy of the events table (same
/// indexes, unique (stream, position) included) — at a position from one global sequence, and appended at its
/// stream's next position as an event store must — then prints the ratios to both.
struct AppendBenchmark {
    static let summary = "visit commands (the product's appends) vs pgbench single-row inserts (see --help)"

    /// How commands commit.
    enum Mode: String, CaseIterable, CustomStringConvertible {
        /// Group commit: `VisitCommandBatcher`, the path of the API.
        case batched
        /// One transaction per command: `VisitCommandHandler.post`.
        case direct
        /// The event store alone: `EventStore.append`, one event per autocommitted statement at its stream's
        /// expected version — pgbench's shape (one row, one transaction), with the store's version check.
        case store
        var description: String { rawValue }
    }

    static let syntax = CommandSyntax(
        command: "livevisits-bench append", summary: summary,
        options: [
            .value("--duration", "SECONDS", "time per measurement (default 10)"),
            .value("--writers", "LIST", "concurrent writers, comma-separated (default 1,4,16)"),
            .value("--streams", "N", "number of visits (default 10000), scheduled before the runs"),
            .value("--distribution", "LIST", "uniform,zipf (default both)"),
            .value(
                "--mode", "LIST",
                "batched (group commit, the API's path, the default), direct (one transaction per command), store (the event store's append alone)"
            ),
            .value("--batches", "N", "group commit: batches in flight at once (default 2, the API's)"),
            .value("--writes", "N", "group commit: of those, batches writing at once (default 1, the API's)"),
            .flag(
                "--no-sync",
                "synchronous_commit=off for both sides (what a fast WAL device would show: commits cost CPU, not a flush wait)"),
            .value("--pgbench", "PATH", "pgbench binary (default /usr/lib/postgresql/15/bin/pgbench)"),
            .flag("--no-pgbench", "skip the pgbench baselines"),
            .value("--rounds", "N", "repeat pgbench and the product N times, alternating; prints median ratios (default 1)"),
            .value(
                "--migrations", "DIR",
                "migration files (default ./Migrations); the read-model SQL and rules come from ./Projections"),
        ],
        details: """
            The cluster comes from LIVEVISITS_DATABASE_URL (start it with scripts/pg start); a scratch database
            is created there and dropped at the end.
            """)

    var duration = 10.0
    var writerCounts = [1, 4, 16]
    var streams = 10_000
    var distributions: [StreamPicker.Distribution] = [.uniform, .zipf]
    var modes: [Mode] = [.batched]
    var concurrentBatches = VisitCommandBatcher.defaultConcurrentBatches
    var concurrentWrites = VisitCommandBatcher.defaultConcurrentWrites
    var pgbenchPath = "/usr/lib/postgresql/15/bin/pgbench"
    var runPgbench = true
    var rounds = 1
    var synchronousCommit = true
    var migrations = URL(fileURLWithPath: "Migrations")

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        duration = try parsed.positiveNumber("--duration") ?? duration
        writerCounts = try parsed.integers("--writers", in: 1...Int.max) ?? writerCounts
        streams = try parsed.integer("--streams", in: 1...Int.max) ?? streams
        distributions = try parsed.choices("--distribution", of: StreamPicker.Distribution.self) ?? distributions
        modes = try parsed.choices("--mode", of: Mode.self) ?? modes
        concurrentBatches = try parsed.integer("--batches", in: 1...Int.max) ?? concurrentBatches
        concurrentWrites = try parsed.integer("--writes", in: 1...Int.max) ?? concurrentWrites
        pgbenchPath = parsed.value("--pgbench") ?? pgbenchPath
        runPgbench = !parsed.has("--no-pgbench")
        rounds = try parsed.integer("--rounds", in: 1...100) ?? rounds
        synchronousCommit = !parsed.has("--no-sync")
        migrations = parsed.value("--migrations").map { URL(fileURLWithPath: $0) } ?? migrations
    }

    /// One measured configuration.
    struct Figure {
        var label: String
        var writers: Int
        var eventsPerSecond: Double
        var p50: Double
        var p99: Double
        var conflictsPerSecond: Double
        /// Group commit only: commands per batch.
        var meanBatch: Double
        var round = 1
        /// CPU µs per event: this process's (pgbench's own for its runs) and this cluster's PostgreSQL.
        var oursMicros = 0.0
        var postgresMicros = 0.0
    }

    func run() async throws {
        let serverURL = try BenchmarkEnvironment.serverURL()
        let database = try await ScratchDatabase.create(serverURL: serverURL, migrations: migrations)
        do {
            try await measureAll(database: database)
        } catch {
            await database.drop()
            throw error
        }
        await database.drop()
    }

    private func measureAll(database: ScratchDatabase) async throws {
        // Both sides connect with the same URL, so a session setting applies to both.
        let url =
            synchronousCommit ? database.url : ScratchDatabase.url(database.url, adding: "options=-csynchronous_commit%3Doff")
        let maxWriters = writerCounts.max() ?? 1
        print(
            "append benchmark: \(streams) visits, progress commands"
                + (modes.contains(.store) ? " (store: \(streams) streams of its own, one event per append)" : "")
                + ", \(Int(duration)) s per run, \(rounds) round(s), "
                + "database \(database.name)" + (synchronousCommit ? "" : ", synchronous_commit=off"))

        let pgbench = PgBench(path: pgbenchPath, url: url, streams: streams)
        if runPgbench { try await pgbench.prepare(eventData: AppendBenchmark.eventData) }
        let projections = URL(fileURLWithPath: "Projections")
        let readModel = try VisitReadModel(
            projectionsDirectory: projections, rules: try ProjectionRules.load(directory: projections))
        var figures: [Figure] = []
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: maxWriters + 2)) { pool in
            // PostgreSQL's CPU is this cluster's only (its postmaster and children), not other clusters'.
            let backend = try await pool.query("SELECT pg_backend_pid() AS pid").first!.int("pid")
            let postmaster = CPUSample.postmaster(ofBackend: Int32(backend)) ?? 0
            let handler = VisitCommandHandler(
                store: EventStore(pool: pool), readModel: readModel, pushes: OutboxPushes(outbox: Outbox(pool: pool)))
            let batcher = VisitCommandBatcher(
                handler: handler, maxConcurrentBatches: concurrentBatches, maxConcurrentWrites: concurrentWrites)
            try await scheduleVisits(batcher: batcher)
            // Store mode: each stream's version as the writers last saw it (a conflict teaches the actual one).
            let versions = StreamVersions(count: streams)
            // Rounds alternate pgbench and the product, so a machine whose load changes affects both alike.
            for round in 1...rounds {
                if runPgbench {
                    for (script, label) in [(PgBench.Script.insert, Self.insertLabel), (.streamAppend, Self.appendLabel)] {
                        for writers in writerCounts {
                            let before = (
                                postgres: CPUSample.clusterSeconds(postmaster: postmaster), bench: CPUSample.children()
                            )
                            let tps = try pgbench.run(script, clients: writers, seconds: duration)
                            let count = max(tps * duration, 1)
                            var figure = Figure(
                                label: label, writers: writers, eventsPerSecond: tps, p50: 0, p99: 0, conflictsPerSecond: 0,
                                meanBatch: 0)
                            figure.round = round
                            figure.oursMicros = (CPUSample.children() - before.bench) / count * 1e6
                            figure.postgresMicros =
                                (CPUSample.clusterSeconds(postmaster: postmaster) - before.postgres) / count * 1e6
                            figures.append(figure)
                            print(line(figure, in: figures))
                        }
                    }
                }
                for mode in modes {
                    for distribution in distributions {
                        let picker = StreamPicker(distribution, count: streams)
                        for writers in writerCounts {
                            let before = (
                                postgres: CPUSample.clusterSeconds(postmaster: postmaster), ours: CPUSample.thisProcess()
                            )
                            var figure = try await measure(
                                mode: mode, batcher: batcher, picker: picker, writers: writers, versions: versions)
                            let count = max(figure.eventsPerSecond * duration, 1)
                            figure.oursMicros = (CPUSample.thisProcess() - before.ours) / count * 1e6
                            figure.postgresMicros =
                                (CPUSample.clusterSeconds(postmaster: postmaster) - before.postgres) / count * 1e6
                            figure.label = "\(mode) \(distribution.rawValue)"
                            figure.round = round
                            figures.append(figure)
                            print(line(figure, in: figures))
                        }
                    }
                }
            }
        }

        print("\nsummary (events/s; p50/p99 latency of one command; ratios to pgbench's tps at the same client count in")
        print("         the same round: its single-row insert, and its append of one row at the stream's next position;")
        print("         group commit: mean commands per batch; CPU µs per event: ours (pgbench's own for its rows), this")
        print("         cluster's PostgreSQL)")
        print(
            "mode     distribution  writers   events/s   p50 ms   p99 ms  conflicts/s  vs insert vs append  batch  ours µs    pg µs"
        )
        for f in figures { print(line(f, in: figures)) }
        if rounds > 1 {
            print("\nmedian over \(rounds) rounds (ratios per round)")
            var seen = Set<String>()
            for f in figures where !f.label.hasPrefix("pgbench") && seen.insert("\(f.label) \(f.writers)").inserted {
                let same = figures.filter { $0.label == f.label && $0.writers == f.writers }
                func median(_ xs: [Double]) -> Double { xs.isEmpty ? 0 : xs.sorted()[xs.count / 2] }
                func ratios(to label: String) -> String {
                    let each = same.compactMap { g in
                        baseline(label, in: figures, round: g.round, writers: g.writers).map { g.eventsPerSecond / $0 }
                    }
                    return String(format: "%.2fx (", median(each))
                        + each.map { String(format: "%.2f", $0) }.joined(separator: ", ")
                        + ")"
                }
                print(
                    f.label.padding(toLength: 22, withPad: " ", startingAt: 0)
                        + String(format: " %7d %10.0f", f.writers, median(same.map(\.eventsPerSecond)))
                        + "  vs insert \(ratios(to: Self.insertLabel)), vs append \(ratios(to: Self.appendLabel))"
                        + String(
                            format: "  ours %.0f µs, pg %.0f µs", median(same.map(\.oursMicros)),
                            median(same.map(\.postgresMicros))))
            }
        }
    }

    /// The pgbench baselines' labels: the single-row insert (target 5 of issue 19) and the append at a stream's
    /// next position.
    static let insertLabel = "pgbench insert"
    static let appendLabel = "pgbench append"

    /// The tps of the pgbench baseline `label` in the same round at the same client count.
    private func baseline(_ label: String, in figures: [Figure], round: Int, writers: Int) -> Double? {
        figures.first { $0.label == label && $0.round == round && $0.writers == writers }?.eventsPerSecond
    }

    /// A figure's line, with its ratios to the pgbench baselines of its round (none for pgbench's own).
    private func line(_ f: Figure, in figures: [Figure]) -> String {
        func ratio(to label: String) -> String {
            guard !f.label.hasPrefix("pgbench"),
                let base = baseline(label, in: figures, round: f.round, writers: f.writers)
            else { return "-" }
            return String(format: "%.2fx", f.eventsPerSecond / base)
        }
        let label = f.label.padding(toLength: 22, withPad: " ", startingAt: 0)
        return label
            + String(
                format: " %7d %10.0f %8.2f %8.2f %12.0f  ", f.writers, f.eventsPerSecond, f.p50 * 1000, f.p99 * 1000,
                f.conflictsPerSecond) + ratio(to: Self.insertLabel).padding(toLength: 10, withPad: " ", startingAt: 0)
            + ratio(to: Self.appendLabel).padding(toLength: 10, withPad: " ", startingAt: 0)
            + (f.meanBatch > 0 ? String(format: "%6.1f", f.meanBatch) : "      ")
            + String(format: " %8.0f %8.0f", f.oursMicros, f.postgresMicros)
    }

    /// The visits the runs post to (`bench-0` …), scheduled through group commit.
    private func scheduleVisits(batcher: VisitCommandBatcher) async throws {
        let start = Int(Date().timeIntervalSince1970) + 900
        let context = AppendBenchmark.context
        let streams = self.streams
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<16 {
                group.addTask {
                    for n in stride(from: lane, to: streams, by: 16) {
                        let json = """
                            {"visitId": "bench-\(n)", "customerId": "c-\(n)",
                             "attributes": {"customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"},
                             "technician": {"id": "t-1", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"},
                             "arrivalWindow": {"start": \(start), "end": \(start + 600)}, "kilometresAway": 14.0}
                            """
                        let scheduled = try ScheduleVisitRequest.parse(Array(json.utf8)) { "bench-\(n)" }
                        _ = try await batcher.execute(
                            VisitCommand(
                                visitId: "bench-\(n)", event: .scheduled(scheduled), context: context, isCreation: true))
                    }
                }
            }
            try await group.waitForAll()
        }
        batcher.handler.store.eventsCommitted(count: streams)
    }

    static let context = VisitCommandContext(actor: EventMetadata(actorRole: "dispatcher", actorSubject: "d-1"))

    /// Runs `writers` tasks posting progress events for `duration` seconds, as the API does after parsing
    /// a request: through the batcher (then the wake-ups after the commit), or alone.
    private func measure(
        mode: Mode, batcher: VisitCommandBatcher, picker: StreamPicker, writers: Int, versions: StreamVersions
    ) async throws -> Figure {
        let batchesBefore = BatchCounters.read()
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(duration * 1e9)
        let handler = batcher.handler
        let context = AppendBenchmark.context
        let storeEvent = NewEvent(
            type: "visitProgressed", data: AppendBenchmark.eventData,
            metadata: EventMetadata(actorRole: "dispatcher", actorSubject: "d-1"))
        let outcomes = try await withThrowingTaskGroup(of: WriterOutcome.self) { group -> [WriterOutcome] in
            for w in 0..<writers {
                group.addTask {
                    var random = SplitMix64(seed: UInt64(w + 1) &* 0x5851_F42D_4C95_7F2D ^ deadline)
                    var outcome = WriterOutcome()
                    outcome.latencies.reserveCapacity(100_000)
                    while DispatchTime.now().uptimeNanoseconds < deadline {
                        let n = picker.pick(using: &random)
                        let km = Double(Int.random(in: 1...400, using: &random)) / 10
                        let event =
                            mode == .store
                            ? nil : try VisitEventRequest.parse(Array("{\"type\":\"progress\",\"kilometresAway\":\(km)}".utf8))
                        let started = DispatchTime.now().uptimeNanoseconds
                        do {
                            switch mode {
                            case .batched:
                                let result = try await batcher.execute(
                                    VisitCommand(visitId: "bench-\(n)", event: event!, context: context, isCreation: false))
                                handler.store.eventsCommitted(count: 1)
                                if result.pushes > 0 { handler.pushes.committed() }
                            case .direct:
                                _ = try await handler.post(visitId: "bench-\(n)", event: event!, context: context)
                            case .store:
                                let version = versions[n]
                                let result = try await handler.store.append(
                                    AppendRequest(
                                        streamName: "store-\(n)", events: [storeEvent],
                                        expectedVersion: version == 0 ? .noStream : .exactly(version)))
                                versions.raise(n, to: result.lastPosition)
                            }
                            outcome.latencies.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
                            outcome.events += 1
                        } catch let error as EventStoreError where error.code == .wrongExpectedVersion {
                            outcome.conflicts += 1
                            if let actual = error.actualVersion { versions.raise(n, to: actual) }
                        }
                    }
                    return outcome
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        var latencies = outcomes.flatMap(\.latencies)
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        let batches = BatchCounters.read() - batchesBefore
        let events = outcomes.reduce(0) { $0 + $1.events }
        let conflicts = outcomes.reduce(0) { $0 + $1.conflicts }
        return Figure(
            label: "", writers: writers, eventsPerSecond: Double(events) / duration, p50: percentile(0.5),
            p99: percentile(0.99), conflictsPerSecond: Double(conflicts) / duration,
            meanBatch: batches.batches > 0 ? batches.commands / batches.batches : 0)
    }

    private struct WriterOutcome: Sendable {
        var latencies: [Double] = []
        var events = 0
        var conflicts = 0
    }

    /// About 200 bytes of JSON, shaped like a visit event: pgbench's row.
    static let eventData: String = {
        var text =
            #"{"visitId":"v-100042","status":"enRoute","kilometresAway":12.5,"#
            + #""arrivalWindow":{"start":1790000300,"end":1790000900},"technician":{"id":"t-42","name":"Sam"},"#
            + #""note":""#
        while text.utf8.count < 196 { text += "x" }
        return text + #""}"#
    }()

}

/// The store mode's stream versions, shared by its writers.
final class StreamVersions: Sendable {
    private let versions: Mutex<[Int64]>

    init(count: Int) {
        versions = Mutex([Int64](repeating: 0, count: count))
    }

    subscript(stream: Int) -> Int64 { versions.withLock { $0[stream] } }

    /// The stream is at `version` at least.
    func raise(_ stream: Int, to version: Int64) {
        versions.withLock { $0[stream] = max($0[stream], version) }
    }
}

/// The visit commands' group-commit counters from the process's metrics.
struct BatchCounters {
    var batches = 0.0
    var commands = 0.0

    static func read() -> BatchCounters {
        let m = Metrics.shared
        return BatchCounters(
            batches: m.value("livevisits_command_batches_total") ?? 0, commands: m.value("livevisits_command_batched_total") ?? 0)
    }

    static func - (a: BatchCounters, b: BatchCounters) -> BatchCounters {
        BatchCounters(batches: a.batches - b.batches, commands: a.commands - b.commands)
    }
}
