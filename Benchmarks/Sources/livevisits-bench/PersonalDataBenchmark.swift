import EventStore
import Foundation
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections

/// `livevisits-bench personal-data`: what sealing the customers' personal data (contract §10) costs, with
/// encryption off and on in the same run, alternating, on scratch databases:
/// - appends: whole visits through the command path (a `scheduled` — a new customer, so a new data key,
///   sealed and wrapped — then its journey), cost per event in µs by writer count;
/// - replay: the same log generated plain and sealed, `VisitReplay` over each, events/s;
/// - answers: opening a visit's view on the way out (`PersonalDataOpener`), µs per answer, reading the key
///   and through a `PersonalDataKeyCache`;
/// - tokens (`--only tokens`): a push token sealed and hashed at registration, and opened just before its
///   send (`SealedPushSender`'s step), µs per token: the crypto alone, and the opening as the worker does it
///   (the key from a listening cache, and read from the database).
struct PersonalDataBenchmark {
    static let summary = "append and replay with personal-data encryption off vs on, in the same run (see --help)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench personal-data",
        summary: summary,
        options: [
            .value("--visits", "N", "visits per append run (default 2000; each is 7 events)"),
            .value("--writers", "LIST", "concurrent writers, comma-separated (default 1,4)"),
            .value("--rounds", "N", "off/on pairs per measurement, alternating; the best of each is compared (default 3)"),
            .value("--replay-events", "N", "events in each replayed log (default 500000)"),
            .value("--only", "PART", "append|replay|tokens (default append and replay)"),
        ])

    var visits = 2_000
    var writerCounts = [1, 4]
    var rounds = 3
    var replayEvents = 500_000
    var only: String?

    init(arguments: [String]) throws {
        let parsed = try PersonalDataBenchmark.syntax.parse(arguments)
        visits = try parsed.integer("--visits", in: 1...Int.max) ?? visits
        writerCounts = try parsed.integers("--writers", in: 1...Int.max) ?? writerCounts
        rounds = try parsed.integer("--rounds", in: 1...100) ?? rounds
        replayEvents = try parsed.integer("--replay-events", in: 10...Int.max) ?? replayEvents
        only = try parsed.choice("--only", among: ["append", "replay", "tokens"])
    }

    static let journey = [
        #"{"type": "enRoute", "kilometresAway": 9.0}"#, #"{"type": "progress", "kilometresAway": 6.0}"#,
        #"{"type": "nearby", "kilometresAway": 1.2}"#, #"{"type": "onSite"}"#, #"{"type": "finishing"}"#,
        #"{"type": "completed"}"#,
    ]

    static func scheduleJSON(_ id: String, customer: String, start: Int) -> String {
        """
        {"visitId": "\(id)", "customerId": "\(customer)",
         "attributes": {"customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"},
         "technician": {"id": "t-1", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"},
         "arrivalWindow": {"start": \(start), "end": \(start + 600)}, "kilometresAway": 14.0}
        """
    }

    func run() async throws {
        let server = try BenchmarkEnvironment.serverURL()
        let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let migrations = root.appendingPathComponent("Migrations")
        let projections = root.appendingPathComponent("Projections")
        let readModel = try VisitReadModel(
            projectionsDirectory: projections, rules: try ProjectionRules.load(directory: projections))
        let keyPath = FileManager.default.temporaryDirectory.appendingPathComponent("lv-bench-\(UUID().uuidString).key").path
        let wrapping = try WrappingKey.generate(path: keyPath)
        defer { try? FileManager.default.removeItem(atPath: keyPath) }
        let keys = PersonalDataKeys(current: wrapping)
        if only == "tokens" {
            return try await tokens(server: server, migrations: migrations, keys: keys)
        }
        if only != "replay" {
            try await appends(server: server, migrations: migrations, readModel: readModel, keys: keys)
        }
        if only != "append" {
            try await replays(server: server, migrations: migrations, readModel: readModel, keys: keys)
        }
    }

    private func appends(server: String, migrations: URL, readModel: VisitReadModel, keys: PersonalDataKeys) async throws {
        print(
            "personal-data benchmark: appends of \(visits) visits × 7 events per run, writers \(writerCounts), \(rounds) rounds")
        try await ScratchDatabase.with(serverURL: server, migrations: migrations) { database in
            try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: (writerCounts.max() ?? 1) + 2)) {
                pool in
                let plain = VisitCommandHandler(store: EventStore(pool: pool), readModel: readModel, pushes: NoPushes())
                let sealed = VisitCommandHandler(
                    store: EventStore(pool: pool), readModel: readModel, pushes: NoPushes(), personalData: keys)
                var run = 0
                for writers in writerCounts {
                    var off: [Double] = []
                    var on: [Double] = []
                    for _ in 0..<rounds {
                        for (encrypted, handler) in [(false, plain), (true, sealed)] {
                            run += 1
                            let us = try await appendRun(handler: handler, writers: writers, prefix: "r\(run)")
                            if encrypted { on.append(us) } else { off.append(us) }
                        }
                    }
                    // Best of the rounds: other load on the machine only ever slows a run down.
                    let offMedian = off.min()!
                    let onMedian = on.min()!
                    print(
                        String(
                            format:
                                "append  %2d writers  best off %7.1f µs/event  on %7.1f µs/event  on/off %.3f  (runs off %@, on %@)",
                            writers, offMedian, onMedian, onMedian / offMedian,
                            off.map { String(format: "%.1f", $0) }.joined(separator: " "),
                            on.map { String(format: "%.1f", $0) }.joined(separator: " ")))
                }

                // Answers: a sealed view opened on the way out, against the plain view passed as is.
                let row = try await pool.withConnection { c in
                    let visit = try c.query("SELECT visit_id FROM visits WHERE state LIKE '%enc:v1:%' LIMIT 1").first!
                    return try VisitReadModel.row(visitId: try visit.string("visit_id"), on: c)!.view
                }
                let opener = PersonalDataOpener(keys: keys)
                let body = Array(row.utf8)
                let n = 2_000
                let seconds = try await pool.withConnection { c -> Double in
                    let t0 = Date()
                    for _ in 0..<n { _ = try opener.open(body, on: c) }
                    return Date().timeIntervalSince(t0)
                }
                print(
                    String(
                        format: "answer  opening a sealed visit view: %.1f µs per answer (key read + unwrap + 3 fields)",
                        seconds / Double(n) * 1e6))
                // The same through a data-key cache whose erasure listener runs, as in `serve`.
                let cache = PersonalDataKeyCache()
                let listener = cache.listener(url: database.url)
                let listening = Task { try await listener.run() }
                defer { listening.cancel() }
                for _ in 0..<100 where !cache.isActive { try await Task.sleep(nanoseconds: 50_000_000) }
                let cached = PersonalDataOpener(keys: keys, cache: cache)
                let t0 = Date()
                for _ in 0..<n { _ = try await cached.open(body, pool: pool) }
                print(
                    String(
                        format: "answer  the same through the data-key cache (listener %@): %.1f µs per answer",
                        cache.isActive ? "up" : "DOWN", Date().timeIntervalSince(t0) / Double(n) * 1e6))
            }
        }

    }

    /// What sealing push tokens costs per push: sealing and hashing at registration, opening at the send.
    private func tokens(server: String, migrations: URL, keys: PersonalDataKeys) async throws {
        let n = 50_000
        print("personal-data benchmark: push tokens, \(n) per measurement, best of \(rounds)")
        try await ScratchDatabase.with(serverURL: server, migrations: migrations) { database in
            try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 2)) { pool in
                let key = try await pool.withConnection { try keys.dataKey(forCustomer: "c-bench", on: $0) }
                let token = String(repeating: "0123456789abcdef", count: 4)
                let sealed = try keys.seal(token, with: key)
                func best(_ label: String, count: Int, _ body: () async throws -> Void) async rethrows {
                    var runs: [Double] = []
                    for _ in 0..<rounds {
                        let t0 = Date()
                        for _ in 0..<count { try await body() }
                        runs.append(Date().timeIntervalSince(t0) / Double(count) * 1e6)
                    }
                    print(String(format: "tokens  %@: %.2f µs per token", label, runs.min()!))
                }
                try await best("seal + keyed hash (registration, key in hand)", count: n) {
                    _ = try keys.seal(token, with: key)
                    _ = key.lookupHash(token)
                }
                await best("open (the send, key in hand)", count: n) {
                    _ = PersonalDataKeys.open(SealedText(sealed)!, with: key)
                }
                let cache = PersonalDataKeyCache()
                let listener = cache.listener(url: database.url)
                let listening = Task { try await listener.run() }
                defer { listening.cancel() }
                for _ in 0..<100 where !cache.isActive { try await Task.sleep(nanoseconds: 50_000_000) }
                let cached = PersonalDataOpener(keys: keys, cache: cache)
                try await best("open through the data-key cache (listener \(cache.isActive ? "up" : "DOWN"))", count: n) {
                    _ = try await cached.openValue(sealed, pool: pool)
                }
                let uncached = PersonalDataOpener(keys: keys)
                try await best("open reading the key (no cache: a round trip and an unwrap)", count: 2_000) {
                    _ = try await uncached.openValue(sealed, pool: pool)
                }
            }
        }
    }

    private func replays(server: String, migrations: URL, readModel: VisitReadModel, keys: PersonalDataKeys) async throws {
        // Replay: the same log, plain and sealed.
        var rates: [Bool: [Double]] = [:]
        for round in 0..<rounds {
            for encrypted in [false, true] {
                let rate = try await replayRun(
                    server: server, migrations: migrations, readModel: readModel, keys: encrypted ? keys : nil)
                rates[encrypted, default: []].append(rate)
                print(String(format: "replay  round %d  %@  %9.0f events/s", round + 1, encrypted ? "on " : "off", rate))
            }
        }
        let offRate = rates[false]!.max()!
        let onRate = rates[true]!.max()!
        print(
            String(
                format: "replay  %d events  best off %.0f events/s  on %.0f events/s  on/off %.3f",
                replayEvents - replayEvents % 7,
                offRate, onRate, onRate / offRate))
    }

    /// Schedules `visits` visits (each its own customer) and posts their journeys with `writers` tasks;
    /// returns the wall time per event in µs.
    private func appendRun(handler: VisitCommandHandler, writers: Int, prefix: String) async throws -> Double {
        let batcher = VisitCommandBatcher(handler: handler)
        let context = VisitCommandContext(actor: EventMetadata(actorRole: "dispatcher", actorSubject: "bench"))
        let start = Int(Date().timeIntervalSince1970) + 900
        let visits = self.visits
        let events = try PersonalDataBenchmark.journey.map { try VisitEventRequest.parse(Array($0.utf8)) }
        let t0 = DispatchTime.now().uptimeNanoseconds
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<writers {
                group.addTask {
                    for n in stride(from: lane, to: visits, by: writers) {
                        let id = "\(prefix)-\(n)"
                        let scheduled = try ScheduleVisitRequest.parse(
                            Array(PersonalDataBenchmark.scheduleJSON(id, customer: "c-\(id)", start: start).utf8)
                        ) { id }
                        _ = try await batcher.execute(
                            VisitCommand(visitId: id, event: .scheduled(scheduled), context: context, isCreation: true))
                        for event in events {
                            _ = try await batcher.execute(
                                VisitCommand(visitId: id, event: event, context: context, isCreation: false))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        return seconds / Double(visits * 7) * 1e6
    }

    /// A log of about `replayEvents` events (one visit through the command path, plain or sealed, cloned by
    /// SQL as `livevisits-bench replay` does), replayed; returns events/s.
    private func replayRun(server: String, migrations: URL, readModel: VisitReadModel, keys: PersonalDataKeys?) async throws
        -> Double
    {
        let visitCount = max(1, replayEvents / 7)
        return try await ScratchDatabase.with(serverURL: server, migrations: migrations) { database in
            try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 4)) { pool in
                let clock = ManualClock(now: Date().timeIntervalSince1970)
                let handler = VisitCommandHandler(
                    store: EventStore(pool: pool), readModel: readModel, pushes: NoPushes(), clock: clock, personalData: keys)
                let context = VisitCommandContext(actor: EventMetadata(actorRole: "dispatcher", actorSubject: "bench"))
                let json = PersonalDataBenchmark.scheduleJSON("TEMPLATE", customer: "c-TEMPLATE", start: Int(clock.now()) + 900)
                _ = try await handler.schedule(try ScheduleVisitRequest.parse(Array(json.utf8)) { "TEMPLATE" }, context: context)
                for step in PersonalDataBenchmark.journey {
                    clock.advance(by: 30)
                    _ = try await handler.post(
                        visitId: "TEMPLATE", event: try VisitEventRequest.parse(Array(step.utf8)), context: context)
                }
                var from = 1
                while from <= visitCount {
                    let to = min(from + 20_000 - 1, visitCount)
                    try await pool.query(
                        """
                        INSERT INTO events (stream_name, position, type, data, metadata, recorded_at)
                        SELECT 'visit-b' || v, t.position, t.type, replace(t.data::text, 'TEMPLATE', 'b' || v)::jsonb, t.metadata,
                               t.recorded_at + make_interval(secs => v)
                        FROM generate_series(\(from)::int, \(to)::int) AS v,
                             (SELECT * FROM events WHERE stream_name = 'visit-TEMPLATE') AS t
                        ORDER BY v, t.position
                        """)
                    from = to + 1
                }
                try await pool.withConnection { try $0.execute(script: "ANALYZE events") }
                let report = try await VisitReplay(pool: pool, readModel: readModel).run()
                print(
                    String(
                        format: "        %@  read %.2f s, fold %.2f s, encode %.2f s, write %.2f s, total %.2f s",
                        keys == nil ? "off" : "on ", report.readSeconds, report.foldSeconds, report.encodeSeconds,
                        report.writeSeconds, report.seconds))
                return report.eventsPerSecond
            }
        }
    }
}
