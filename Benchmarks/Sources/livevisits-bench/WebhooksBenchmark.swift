import Foundation
import HTTPServer
import LiveActivityLedger
import Outbox
import PersonalData
import Postgres
import Runtime
import Synchronization
import Webhooks

/// The webhooks benchmark, against a receiver in this process or (`--receiver process`) in a process of its own
/// (the project's HTTP server answering 204):
/// - transport: N POSTs through the libcurl transport alone, 256 in flight (the reference: the ceiling the
///   receiver and the client set on this machine);
/// - worker: N webhook rows (events over N/`--per-visit` visits) drained by one webhook worker: deliveries/s,
///   and the ratio to the transport's rate;
/// - pushes: one outbox worker draining M enqueued pushes (a loopback APNs answering after 2 ms), first with
///   webhooks off, then with them on and a webhook worker sending what the events and the deliveries report
///   meanwhile, and with them on but no webhook worker (what the push path itself pays): pushes/s and the
///   ratios (alternated `--rounds` times).
enum WebhooksBenchmark {
    struct Options {
        var count = 20_000
        var perVisit = 4
        var pushes = 20_000
        var rounds = 2
        var connections = 64
        /// Whether the receiver runs in this process or in a process of its own (`webhook-receiver`).
        var receiver = "in-process"
    }

    static let summary =
        "webhook deliveries/s from one worker to a local receiver; pushes/s with and without webhooks (--count N --pushes M)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench webhooks", summary: summary,
        options: [
            .value("--count", "N", "webhooks of the worker phase and POSTs of the transport phase (default 20000)"),
            .value("--per-visit", "K", "webhooks per visit in the worker phase (sent one at a time, in order; default 4)"),
            .value("--pushes", "M", "pushes of each outbox drain (default 20000)"),
            .value("--rounds", "R", "drains without and with webhooks, alternated (default 2)"),
            .value("--connections", "N", "connections to the receiver (default 64)"),
            .value(
                "--receiver", "WHERE",
                "in-process (the receiver's threads in this process) or process (livevisits-bench webhook-receiver, a process of its own; default in-process)"
            ),
        ],
        details:
            "Needs LIVEVISITS_DATABASE_URL; a scratch database is created there and dropped. Each drain starts from emptied, vacuumed tables and a CHECKPOINT (the role needs pg_checkpoint or superuser)."
    )

    static func main(arguments: [String]) async throws {
        let parsed = try syntax.parse(arguments)
        var options = Options()
        options.count = try parsed.integer("--count", in: 1...Int.max) ?? options.count
        options.perVisit = try parsed.integer("--per-visit", in: 1...Int.max) ?? options.perVisit
        options.pushes = try parsed.integer("--pushes", in: 1...Int.max) ?? options.pushes
        options.rounds = try parsed.integer("--rounds", in: 1...100) ?? options.rounds
        options.connections = try parsed.integer("--connections", in: 1...4096) ?? options.connections
        options.receiver = try parsed.choice("--receiver", among: ["in-process", "process"]) ?? options.receiver
        let serverURL = try BenchmarkEnvironment.serverURL()
        Logger.minimumLevel.withLock { $0 = .warning }
        let received = Atomic<Int>(0)
        let port: UInt16
        var child: RunningChild?
        var running: Task<Void, any Error>?
        if options.receiver == "process" {
            let started = try await WebhookReceiverProcess.start()
            child = started.child
            port = started.port
        } else {
            let receiver = try WebhookReceiverProcess.server { _ in received.add(1, ordering: .relaxed) }
            running = Task { try await receiver.run() }
            port = receiver.address.port
        }
        defer {
            running?.cancel()
            child?.signal(SIGKILL)
        }
        let url = "http://127.0.0.1:\(port)/hooks"
        print(
            "webhooks benchmark: receiver \(url) (\(options.receiver == "process" ? "a process of its own" : "in this process"), 2 threads), \(options.connections) connections; load \(PipelineBenchmark.loadAverage())"
        )
        let transport = CurlWebhookTransport(maximumConnections: options.connections)
        let reference = try await transportAlone(transport, url: url, count: options.count)
        try await ScratchDatabase.with(serverURL: serverURL, migrations: URL(fileURLWithPath: "Migrations")) { database in
            try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 12)) { pool in
                var configuration = WebhookConfiguration(url: url, secret: "bench-secret")
                configuration.maximumConnections = options.connections
                let rate = try await workerPhase(pool: pool, configuration: configuration, transport: transport, options: options)
                print(String(format: "worker / transport alone: %.2f", rate / reference))
                var without: [Double] = []
                var with: [Double] = []
                var written: [Double] = []
                for round in 1...options.rounds {
                    // Alternated, so that neither kind of drain always runs on the later (warmer, fuller) machine.
                    var kinds = ["off", "on", "written"]
                    if round % 2 == 0 { kinds.reverse() }
                    for kind in kinds {
                        let rate = try await pushPhase(
                            "round \(round), webhooks \(kind == "off" ? "off" : kind == "on" ? "on" : "on, no worker")",
                            pool: pool, url: database.url, webhooks: kind == "off" ? nil : configuration,
                            transport: transport, count: options.pushes, send: kind == "on")
                        switch kind {
                        case "off": without.append(rate)
                        case "on": with.append(rate)
                        default: written.append(rate)
                        }
                    }
                }
                let off = without.reduce(0, +) / Double(without.count)
                let on = with.reduce(0, +) / Double(with.count)
                let writtenOnly = written.reduce(0, +) / Double(written.count)
                print(
                    String(
                        format: "pushes/s: %.0f without webhooks, %.0f with them flowing (mean of %d): ratio %.2f", off, on,
                        options.rounds, on / off))
                print(
                    String(
                        format: "pushes/s with webhooks on but no webhook worker (the push path's own share): %.0f, ratio %.2f",
                        writtenOnly, writtenOnly / off))
            }
        }
        await transport.close()
        if let process = child {
            _ = await process.stop(SIGTERM, killAfter: 5)
            child = nil
        } else {
            print("receiver got \(received.load(ordering: .relaxed)) POSTs")
        }
        print("load average after: \(PipelineBenchmark.loadAverage())")
    }

    /// N POSTs through the transport alone, 256 at a time: the reference rate.
    static func transportAlone(_ transport: CurlWebhookTransport, url: String, count: Int) async throws -> Double {
        let body = Array(#"{"id":"x","type":"visit.event","visitId":"v","occurredAt":0,"data":{}}"#.utf8)
        let started = ContinuousClock.now
        let failures = await withTaskGroup(of: Int.self) { group in
            var next = 0
            var failures = 0
            func add() {
                next += 1
                group.addTask {
                    let answer = await transport.post(
                        WebhookRequest(url: url, headers: [], body: body, timeoutSeconds: 10))
                    return answer.isSuccess ? 0 : 1
                }
            }
            while next < min(256, count) { add() }
            for await failed in group {
                failures += failed
                if next < count { add() }
            }
            return failures
        }
        let seconds = seconds(since: started)
        let rate = Double(count) / seconds
        print(
            String(format: "transport alone: %d POSTs in %.2f s = %.0f/s (%d failed)", count, seconds, rate, failures))
        return rate
    }

    /// N webhook rows written by the events' trigger, then drained by one worker.
    static func workerPhase(
        pool: PostgresPool, configuration: WebhookConfiguration, transport: CurlWebhookTransport, options: Options
    ) async throws -> Double {
        let store = WebhookStore(pool: pool)
        try await store.setEnabled(true)
        let visits = max(1, options.count / options.perVisit)
        _ = try await pool.query(
            """
            INSERT INTO events (stream_name, position, type, data, metadata)
            SELECT 'visit-wh-' || (n % \(visits)), n / \(visits) + 1, 'progress', '{"kilometresAway":1.2}',
                   '{"actorRole":"technician","actorSubject":"t-1"}'
            FROM generate_series(0, \(options.count - 1)) AS n ORDER BY n
            """)
        let worker = WebhookWorker(
            pool: pool, configuration: configuration, transport: transport, opener: nil, metrics: Metrics(),
            logger: Logger(label: "webhooks"))
        let started = ContinuousClock.now
        let running = Task { try await worker.run() }
        try await waitUntil(pool: pool, "SELECT count(*) AS n FROM webhooks WHERE state IN ('pending', 'sending')")
        let seconds = seconds(since: started)
        worker.stop()
        _ = try? await running.value
        let sent = try await integer(pool, "SELECT count(*) AS n FROM webhooks WHERE state = 'sent'")
        let rate = Double(options.count) / seconds
        print(
            String(
                format: "worker: %d webhooks over %d visits in %.2f s = %.0f deliveries/s (%d sent)", options.count, visits,
                seconds, rate, sent))
        _ = try await pool.query("DELETE FROM webhooks")
        return rate
    }

    /// M events appended with their pushes while no worker runs, then one outbox worker drains them; with
    /// `webhooks`, the triggers write webhooks for the events and the deliveries and a webhook worker sends them
    /// meanwhile. Answers pushes/s of the drain.
    static func pushPhase(
        _ label: String, pool: PostgresPool, url: String, webhooks: WebhookConfiguration?, transport: CurlWebhookTransport,
        count: Int, send: Bool = true
    ) async throws -> Double {
        // Each drain starts from the same tables: emptied of what earlier drains left, vacuumed, checkpointed.
        _ = try await pool.query("TRUNCATE deliveries, delivery_attempts, delivery_targets, live_activities, webhooks")
        // The targets of earlier pushes, as a running outbox has them: with the table empty and analysed so, the
        // claim was planned with a scan of the whole table per pushed row, which grew as the drain filled it.
        _ = try await pool.query(
            "INSERT INTO delivery_targets (target, last_sent_timestamp) SELECT 'earlier-' || n, 1 FROM generate_series(1, \(count)) n"
        )
        _ = try await pool.query("VACUUM (ANALYZE) deliveries, delivery_targets, live_activities, webhooks, events")
        _ = try await pool.query("CHECKPOINT")
        try await WebhookStore(pool: pool).setEnabled(webhooks != nil)
        let prefix = "p\(UUID().uuidString.prefix(6))"
        let registry = TokenRegistry()
        try await pool.withTransaction { connection in
            for v in 0..<count {
                try registry.registerLiveActivity(
                    visitId: "\(prefix)-\(v)", activityId: "a", pushToken: token(prefix, v), environment: .sandbox,
                    on: connection)
            }
        }
        let outbox = Outbox(pool: pool)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for v in stride(from: writer, to: count, by: 8) {
                        let recordedAt = Date().timeIntervalSince1970
                        let ts = Int64(recordedAt) + 1
                        try await outbox.appendVisitEvent(
                            visit: "\(prefix)-\(v)", eventType: "nearby", recordedAt: recordedAt,
                            intent: intent(visit: "\(prefix)-\(v)", timestamp: ts, recordedAt: recordedAt), pool: pool)
                    }
                }
            }
            try await group.waitForAll()
        }
        // Statistics of the backlog the drain starts from, as autovacuum would have them by then.
        _ = try await pool.query("ANALYZE deliveries, live_activities, webhooks")
        let sender = WebhooksBenchmarkSender()
        let pushes = OutboxWorker(
            pool: pool, sender: sender, metrics: Metrics(), logger: Logger(label: "outbox"))
        let webhookWorker = webhooks.flatMap { configuration -> WebhookWorker? in
            guard send else { return nil }
            // As `serve` wires it: webhooks yield while the pushes have a backlog.
            return WebhookWorker(
                pool: pool, configuration: configuration, transport: transport, opener: nil, metrics: Metrics(),
                logger: Logger(label: "webhooks"), pushesBacklogged: { pushes.hasBacklog })
        }
        let hooksBefore = try await integer(pool, "SELECT count(*) AS n FROM webhooks WHERE state = 'sent'")
        let started = ContinuousClock.now
        let hooks = Task { try await webhookWorker?.run() }
        let running = Task { try await pushes.run() }
        try await waitUntil(pool: pool, "SELECT count(*) AS n FROM deliveries WHERE state IN ('pending', 'sending')")
        let seconds = seconds(since: started)
        let hooksSent = try await integer(pool, "SELECT count(*) AS n FROM webhooks WHERE state = 'sent'") - hooksBefore
        pushes.stop()
        _ = try? await running.value
        webhookWorker?.stop()
        _ = try? await hooks.value
        let rate = Double(count) / seconds
        print(
            String(
                format: "%@: %d pushes drained in %.2f s = %.0f pushes/s%@", label, count, seconds, rate,
                webhooks == nil ? "" : String(format: "; %d webhooks sent meanwhile", hooksSent)))
        return rate
    }

    static func waitUntil(pool: PostgresPool, _ countQuery: PostgresQuery) async throws {
        while try await integer(pool, countQuery) > 0 { try await Task.sleep(nanoseconds: 20_000_000) }
    }

    static func integer(_ pool: PostgresPool, _ query: PostgresQuery) async throws -> Int {
        Int(try await pool.query(query).first?["n"] ?? "0") ?? 0
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let d = start.duration(to: .now)
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }

    static func intent(visit: String, timestamp: Int64, recordedAt: Double) -> PushIntent {
        let body = """
            {"aps":{"timestamp":\(timestamp),"event":"update","content-state":{"technicianName":"Sam",\
            "avatarSymbol":"person.crop.circle","vanDescription":"White van, blue stripe","arrivalStartEpoch":\(timestamp + 300),\
            "arrivalEndEpoch":\(timestamp + 900),"status":"nearby","kilometresAway":1.2},"stale-date":\(timestamp + 120),\
            "relevance-score":100}}
            """
        return PushIntent(
            visitId: visit, customerId: "c-bench", kind: .update, audience: .liveActivities, priority: 5,
            apsTimestamp: timestamp, body: Array(body.utf8), staleDate: timestamp + 120, visitVersion: 2,
            eventRecordedAt: recordedAt)
    }

    static func token(_ prefix: String, _ v: Int) -> String {
        let hex =
            String(UInt64(truncatingIfNeeded: v), radix: 16) + "0"
            + String(prefix.utf8.reduce(0) { $0 &* 31 &+ Int($1) } & 0xFFFF, radix: 16)
        return String((hex + String(repeating: "0", count: 64)).prefix(64))
    }
}

/// APNs on loopback: accepted after 2 ms (what the outbox benchmark's loopback sender does).
private struct WebhooksBenchmarkSender: PushSender {
    func send(_ push: OutgoingPush) async -> PushOutcome {
        try? await Task.sleep(nanoseconds: 2_000_000)
        return .accepted(latency: 0.002)
    }
}

/// The benchmark's webhook receiver: the project's HTTP server answering 204 to anything, in this process or
/// as `livevisits-bench webhook-receiver`, a process of its own (so that its CPU is not this process's).
enum WebhookReceiverProcess {
    static let summary = "a webhook receiver answering 204, for webhooks --receiver process (prints its port)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench webhook-receiver", summary: summary, options: [],
        details:
            "Listens on a free loopback port, prints `listening <port>`, and answers every request 204 until SIGTERM, or until the process that started it ends."
    )

    /// The receiver; `received` sees each request (on a server thread) before it is answered.
    static func server(_ received: @escaping @Sendable (HTTPRequest) -> Void = { _ in }) throws -> HTTPServer {
        try HTTPServer(
            configuration: HTTPServerConfiguration(
                listenAddress: ListenAddress(host: "127.0.0.1", port: 0), connectionLimit: 4096,
                perAddressConnectionLimit: 4096),
            logger: Logger(label: "receiver"), metrics: Metrics()
        ) { request in
            received(request)
            return HTTPResponse(status: 204)
        }
    }

    /// The command: serves until SIGTERM (the default action) or until its parent is gone.
    static func main(arguments: [String]) async throws {
        _ = try syntax.parse(arguments)
        Logger.minimumLevel.withLock { $0 = .warning }
        let receiver = try server()
        let running = Task { try await receiver.run() }
        FileHandle.standardOutput.write(Data("listening \(receiver.address.port)\n".utf8))
        let parent = getppid()
        while getppid() == parent { try await Task.sleep(for: .milliseconds(200)) }
        running.cancel()
    }

    /// Starts the receiver process next to this binary; its port once it listens (within 10 s).
    static func start() async throws -> (child: RunningChild, port: UInt16) {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("lv-bench-receiver-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        let child = try ChildProcess(executable, ["webhook-receiver"]).start(stdout: .file(out), stderr: .inherit)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening ") }),
                let port = UInt16(line.dropFirst("listening ".count))
            {
                return (child, port)
            }
            guard child.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        child.signal(SIGKILL)
        _ = await child.wait()
        throw BenchmarkUsageError(message: "the webhook receiver process did not start listening within 10 s")
    }
}
