import EventStore
import Foundation
import Postgres
import Runtime
import Synchronization

/// `livevisits-bench append`: appends ~200-byte events with expected versions to many streams (uniform and
/// Zipf-skewed) at several writer counts for a fixed time each, prints events/s and p50/p99 latency, and in
/// the same run measures the machine's own limit with `pgbench` inserting one row of the same size into a
/// copy of the events table (same unique (stream, position) index), then prints the ratios.
struct AppendBenchmark {
    static let summary = "event-store appends vs pgbench single-row inserts (see --help)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench append", summary: summary,
        options: [
            .value("--duration", "SECONDS", "time per measurement (default 10)"),
            .value("--writers", "LIST", "concurrent writers, comma-separated (default 1,4,16)"),
            .value("--streams", "N", "number of streams (default 10000)"),
            .value("--distribution", "LIST", "uniform,zipf (default both)"),
            .value("--mode", "LIST", "batched (group commit, the default) and/or direct (one transaction per append)"),
            .value("--batches", "N", "group commit: batches in flight at once (default \(GroupCommit().maxConcurrentBatches))"),
            .flag("--no-sync", "synchronous_commit=off for both sides (what a fast WAL device would show)"),
            .value("--pgbench", "PATH", "pgbench binary (default /usr/lib/postgresql/15/bin/pgbench)"),
            .flag("--no-pgbench", "skip the pgbench baseline"),
            .value("--migrations", "DIR", "migration files (default ./Migrations)"),
        ],
        details: """
            The cluster comes from LIVEVISITS_DATABASE_URL (start it with scripts/pg start); a scratch database
            is created there and dropped at the end.
            """)

    var duration = 10.0
    var writerCounts = [1, 4, 16]
    var streams = 10_000
    var distributions: [StreamPicker.Distribution] = [.uniform, .zipf]
    var modes: [GroupCommit.Mode] = [.batched]
    var concurrentBatches = GroupCommit().maxConcurrentBatches
    var pgbenchPath = "/usr/lib/postgresql/15/bin/pgbench"
    var runPgbench = true
    var synchronousCommit = true
    var migrations = URL(fileURLWithPath: "Migrations")

    init(arguments: [String]) throws {
        let parsed = try Self.syntax.parse(arguments)
        duration = try parsed.positiveNumber("--duration") ?? duration
        writerCounts = try parsed.integers("--writers", in: 1...Int.max) ?? writerCounts
        streams = try parsed.integer("--streams", in: 1...Int.max) ?? streams
        if let list = parsed.value("--distribution") {
            distributions = try list.split(separator: ",").map {
                guard let d = StreamPicker.Distribution(rawValue: String($0)) else { throw Self.syntax.mistake("unknown distribution \($0)") }
                return d
            }
        }
        if let list = parsed.value("--mode") {
            modes = try list.split(separator: ",").map {
                switch $0 {
                case "batched": return .batched
                case "direct": return .direct
                default: throw Self.syntax.mistake("unknown mode \($0)")
                }
            }
        }
        concurrentBatches = try parsed.integer("--batches", in: 1...Int.max) ?? concurrentBatches
        pgbenchPath = parsed.value("--pgbench") ?? pgbenchPath
        runPgbench = !parsed.has("--no-pgbench")
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
        /// Group commit only: appends per batch and the database time of one batch.
        var meanBatch: Double
        var meanBatchMilliseconds: Double
    }

    func run() async throws {
        guard let serverURL = ProcessInfo.processInfo.environment["LIVEVISITS_DATABASE_URL"], !serverURL.isEmpty else {
            throw BenchmarkUsageError(message: "set LIVEVISITS_DATABASE_URL (for the private cluster: export LIVEVISITS_DATABASE_URL=$(scripts/pg url))")
        }
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
        let url = synchronousCommit ? database.url : ScratchDatabase.url(database.url, adding: "options=-csynchronous_commit%3Doff")
        let maxWriters = writerCounts.max() ?? 1
        print("append benchmark: \(streams) streams, ~\(AppendBenchmark.eventBytes) bytes per event, \(Int(duration)) s per run, database \(database.name)"
            + (synchronousCommit ? "" : ", synchronous_commit=off"))

        var baseline: [Int: Double] = [:]
        if runPgbench {
            let pgbench = PgBench(path: pgbenchPath, url: url, streams: streams)
            try await pgbench.prepare(eventData: AppendBenchmark.eventData)
            for writers in writerCounts {
                let tps = try pgbench.run(clients: writers, seconds: duration)
                baseline[writers] = tps
                print(String(format: "pgbench   single-row insert  %3d clients  %9.0f tps", writers, tps))
            }
        }

        var figures: [Figure] = []
        var runIndex = 0
        for mode in modes {
            let pool = PostgresPool(configuration: PostgresConfiguration(url: url, size: maxWriters + 2))
            let store = EventStore(pool: pool, groupCommit: GroupCommit(mode: mode, maxConcurrentBatches: concurrentBatches))
            for distribution in distributions {
                let picker = StreamPicker(distribution, count: streams)
                for writers in writerCounts {
                    runIndex += 1
                    var figure = try await measure(
                        store: store, picker: picker, writers: writers, streamPrefix: "r\(runIndex)-")
                    figure.label = "\(mode) \(distribution.rawValue)"
                    figures.append(figure)
                    print(line(figure, baseline: baseline[writers]))
                }
            }
            await pool.close()
        }

        print("\nsummary (events/s; p50/p99 latency of one append; ratio to pgbench tps at the same client count;")
        print("         group commit: mean appends per batch and mean database time of one batch)")
        print("mode     distribution  writers   events/s   p50 ms   p99 ms  conflicts/s  vs pgbench  batch  batch ms")
        for f in figures { print(line(f, baseline: baseline[f.writers])) }
    }

    private func line(_ f: Figure, baseline: Double?) -> String {
        let ratio = baseline.map { String(format: "%.2fx", f.eventsPerSecond / $0) } ?? "-"
        let label = f.label.padding(toLength: 22, withPad: " ", startingAt: 0)
        return label + String(
            format: " %7d %10.0f %8.2f %8.2f %12.0f  ", f.writers, f.eventsPerSecond, f.p50 * 1000, f.p99 * 1000,
            f.conflictsPerSecond) + ratio.padding(toLength: 10, withPad: " ", startingAt: 0)
            + (f.meanBatch > 0 ? String(format: "%6.1f %7.2f", f.meanBatch, f.meanBatchMilliseconds) : "")
    }

    /// Runs `writers` tasks appending for `duration` seconds; each keeps the stream versions it learned.
    private func measure(
        store: EventStore, picker: StreamPicker, writers: Int, streamPrefix: String
    ) async throws -> Figure {
        let versions = StreamVersions(count: picker.count)
        let batchesBefore = BatchCounters.read()
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(duration * 1e9)
        let event = NewEvent(
            type: "visitProgressed", data: AppendBenchmark.eventData,
            metadata: EventMetadata(actorRole: "dispatcher", actorSubject: "d-1"))
        let outcomes = try await withThrowingTaskGroup(of: WriterOutcome.self) { group -> [WriterOutcome] in
            for w in 0..<writers {
                group.addTask {
                    var random = FastRandom(seed: UInt64(w + 1) &* 0x5851_F42D_4C95_7F2D ^ deadline)
                    var outcome = WriterOutcome()
                    outcome.latencies.reserveCapacity(100_000)
                    while DispatchTime.now().uptimeNanoseconds < deadline {
                        let stream = picker.pick(using: &random)
                        let version = versions.get(stream)
                        let started = DispatchTime.now().uptimeNanoseconds
                        do {
                            let result = try await store.append(AppendRequest(
                                streamName: streamPrefix + String(stream), events: [event],
                                expectedVersion: version == 0 ? .noStream : .exactly(version)))
                            outcome.latencies.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
                            outcome.events += result.globalPositions.count
                            versions.raise(stream, to: result.lastPosition)
                        } catch let error as EventStoreError where error.code == .wrongExpectedVersion {
                            outcome.conflicts += 1
                            versions.raise(stream, to: error.actualVersion ?? version)
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
            meanBatch: batches.batches > 0 ? batches.appends / batches.batches : 0,
            meanBatchMilliseconds: batches.batches > 0 ? batches.seconds * 1000 / batches.batches : 0)
    }

    private struct WriterOutcome: Sendable {
        var latencies: [Double] = []
        var events = 0
        var conflicts = 0
    }

    /// About 200 bytes of JSON, shaped like a visit event.
    static let eventData: String = {
        var text = #"{"visitId":"v-100042","status":"enRoute","kilometresAway":12.5,"#
            + #""arrivalWindow":{"start":1790000300,"end":1790000900},"technician":{"id":"t-42","name":"Sam"},"#
            + #""note":""#
        while text.utf8.count < 196 { text += "x" }
        return text + #""}"#
    }()

    static var eventBytes: Int { eventData.utf8.count }
}

/// Group-commit counters from the process's metrics.
struct BatchCounters {
    var batches = 0.0
    var appends = 0.0
    var seconds = 0.0

    static func read() -> BatchCounters {
        let m = Metrics.shared
        return BatchCounters(
            batches: m.value("livevisits_append_batches_total") ?? 0,
            appends: m.value("livevisits_append_batched_appends_total") ?? 0,
            seconds: m.value("livevisits_append_batch_seconds_total") ?? 0)
    }

    static func - (a: BatchCounters, b: BatchCounters) -> BatchCounters {
        BatchCounters(batches: a.batches - b.batches, appends: a.appends - b.appends, seconds: a.seconds - b.seconds)
    }
}

/// The version each writer last saw per stream, shared so that writers mostly append at the right version.
final class StreamVersions: Sendable {
    private let versions: Mutex<[Int64]>
    init(count: Int) { versions = Mutex(Array(repeating: 0, count: count)) }
    func get(_ stream: Int) -> Int64 { versions.withLock { $0[stream] } }
    func raise(_ stream: Int, to version: Int64) { versions.withLock { $0[stream] = max($0[stream], version) } }
}
