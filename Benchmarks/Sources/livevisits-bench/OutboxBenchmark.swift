import APNs
import APNsSimulator
import EventStore
import Foundation
import LiveActivityLedger
import Outbox
import OutboxAPNs
import Postgres
import Runtime
import Synchronization

/// The outbox benchmark: appends N visit events, each with its push intent in the same transaction and round
/// trip (as the command handler does), while one `OutboxWorker` delivers them, and prints pushes/s and the delay from
/// append to APNs acknowledgement (p50, p99).
///
/// Two phases on a scratch database (created and dropped on `LIVEVISITS_DATABASE_URL`'s server):
/// - saturated: N events appended as fast as 8 writers can; figures are sustained pushes/s;
/// - paced: N/4 events at `--rate` per second (default 500), below saturation; figures are the delays.
///
/// Entry: `try await OutboxBenchmark.main(arguments:)` from `livevisits-bench outbox [--count N] [--rate R]`.
/// `sender` is the APNs client aimed at the simulator (`LIVEVISITS_APNS_URL`); without one, a loopback
/// sender answers 200 after `--latency` seconds (default 0.002), which measures the outbox alone.
enum OutboxBenchmark {
    struct Options {
        var count = 20_000
        var rate = 500.0
        var latency = 0.002
        var writers = 8
        /// Appends without enqueueing (and no worker): the event store's own rate, for comparison.
        var appendOnly = false
        /// Appends and enqueues, with no worker running: the cost of the outbox on the append path.
        var enqueueOnly = false
        /// Through the project's APNs simulator (in process, HTTP/2 over TLS on loopback) and the real client.
        var simulator = false
        var batchSize = OutboxConfiguration().batchSize
        var loops = OutboxConfiguration().concurrentBatches
        /// Only the backlog phase (a worker draining N enqueued pushes).
        var backlogOnly = false
        /// The pushes' `apns-priority`: 10 makes every claim count the budget (contract §8).
        var priority = 5
        /// Pace every push as a progress update (contract §8's cadence) by this many seconds; nil: not paced.
        var pacingSeconds: Double?
    }

    static let summary =
        "appends N events with their push intents; one outbox worker delivers them (--count N --rate R --simulator)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench outbox", summary: summary,
        options: [
            .value("--count", "N", "events (and pushes) of the saturated phase (default 20000)"),
            .value("--rate", "R", "events/s of the paced phase (default 500)"),
            .value("--latency", "SECONDS", "the loopback sender's answer delay (default 0.002)"),
            .value("--writers", "N", "concurrent appenders (default 8)"),
            .flag("--append-only", "append without enqueueing, no worker: the event store's own rate"),
            .flag("--enqueue-only", "append and enqueue, no worker: the outbox's cost on the append path"),
            .flag("--simulator", "send through the real APNs client to the project's simulator"),
            .flag("--backlog-only", "only a worker draining N enqueued pushes"),
            .value("--batch", "N", "deliveries per claim (default \(OutboxConfiguration().batchSize))"),
            .value("--loops", "N", "claim loops (default \(OutboxConfiguration().concurrentBatches))"),
            .value("--priority", "5|10", "apns-priority of the pushes; 10 counts the budget on every claim (default 5)"),
            .value("--paced", "SECONDS", "pace every push as a progress update by SECONDS (the cadence's bookkeeping)"),
        ],
        details: "Needs LIVEVISITS_DATABASE_URL; a scratch database is created there and dropped.")

    static func main(arguments: [String], sender: (any PushSender)? = nil, senderName: String = "loopback") async throws {
        let parsed = try syntax.parse(arguments)
        var options = Options()
        options.count = try parsed.integer("--count", in: 1...Int.max) ?? options.count
        options.rate = try parsed.positiveNumber("--rate") ?? options.rate
        options.latency =
            try parsed.value("--latency", expected: "seconds (0 or more)") { Double($0).flatMap { $0 >= 0 ? $0 : nil } }
            ?? options.latency
        options.writers = try parsed.integer("--writers", in: 1...Int.max) ?? options.writers
        options.appendOnly = parsed.has("--append-only")
        options.enqueueOnly = parsed.has("--enqueue-only")
        options.simulator = parsed.has("--simulator")
        options.backlogOnly = parsed.has("--backlog-only")
        options.batchSize = try parsed.integer("--batch", in: 1...Int.max) ?? options.batchSize
        options.loops = try parsed.integer("--loops", in: 1...Int.max) ?? options.loops
        options.priority = try parsed.integer("--priority", in: 5...10) ?? options.priority
        guard options.priority == 5 || options.priority == 10 else { throw BenchmarkError(message: "--priority: 5 or 10") }
        options.pacingSeconds = try parsed.positiveNumber("--paced")
        let serverURL = try BenchmarkEnvironment.serverURL()
        let acks = AckLog()
        var simulator: APNsSimulator?
        var client: APNsClient?
        var name = senderName
        if options.simulator && sender == nil {
            let (sim, apns) = try await startSimulator()
            simulator = sim
            client = apns
            name = "APNs client → simulator at \(sim.endpoint?.url ?? "?")"
        }
        let inner: any PushSender = sender ?? client.map(APNsPushSender.init(client:)) ?? LoopbackSender(latency: options.latency)
        let recording = AckRecordingSender(inner: inner, log: acks)
        do {
            try await ScratchDatabase.with(serverURL: serverURL, migrations: URL(fileURLWithPath: "Migrations")) { database in
                let url = database.url
                print(
                    "outbox benchmark: sender=\(sender == nil && client == nil ? "loopback (latency \(options.latency) s)" : name), one worker"
                )
                if options.appendOnly {
                    try await appendOnly(count: options.count, writers: options.writers, url: url)
                    return
                }
                if options.enqueueOnly {
                    try await phase(
                        "enqueue only", count: options.count, rate: nil, writers: options.writers, url: url, sender: nil,
                        acks: acks)
                    return
                }
                if !options.backlogOnly {
                    try await phase(
                        "saturated", count: options.count, rate: nil, writers: options.writers, url: url, sender: recording,
                        acks: acks,
                        options: options)
                    try await phase(
                        "paced", count: max(1, options.count / 4), rate: options.rate, writers: options.writers, url: url,
                        sender: recording, acks: acks, options: options)
                }
                try await phase(
                    "backlog", count: options.count, rate: nil, writers: options.writers, url: url, sender: recording,
                    acks: acks, startWorkerAfterAppends: true, options: options)
            }
        } catch {
            await client?.shutdown()
            await simulator?.stop()
            throw error
        }
        await client?.shutdown()
        await simulator?.stop()
    }

    /// Registers one Live Activity per visit, then appends one event per visit (each → one update push).
    private static func phase(
        _ label: String, count: Int, rate: Double?, writers: Int, url: String, sender: AckRecordingSender?, acks: AckLog,
        startWorkerAfterAppends: Bool = false, options: Options = Options()
    ) async throws {
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: writers + 4)) { pool in
            let prefix = "\(label)-\(UUID().uuidString.prefix(6))"
            let registry = TokenRegistry()
            try await pool.withTransaction { connection in
                for v in 0..<count {
                    try registry.registerLiveActivity(
                        visitId: "\(prefix)-\(v)", activityId: "a", pushToken: token(prefix, v), environment: .sandbox,
                        on: connection)
                }
            }
            acks.reset()
            var configuration = OutboxConfiguration()
            configuration.pollIntervalSeconds = 0.5
            configuration.batchSize = options.batchSize
            configuration.concurrentBatches = options.loops
            configuration.maximumConcurrentSends = max(options.batchSize, configuration.maximumConcurrentSends)
            let outbox = Outbox(pool: pool)
            let gate = WakeUp()
            let services = Task {
                guard let sender else { return }
                if startWorkerAfterAppends { _ = await gate.wait(upTo: 3600) }
                let worker = OutboxWorker(pool: pool, sender: sender, configuration: configuration)
                let listener = worker.listener(url: url)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await listener.run() }
                    group.addTask { try await worker.run() }
                    try await group.waitForAll()
                }
            }
            try await Task.sleep(nanoseconds: 300_000_000)  // LISTEN established

            let started = Date().timeIntervalSince1970
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for v in stride(from: writer, to: count, by: writers) {
                            if let rate {
                                let due = started + Double(v) / rate
                                let wait = due - Date().timeIntervalSince1970
                                if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
                            }
                            let visit = "\(prefix)-\(v)"
                            let recordedAt = Date().timeIntervalSince1970
                            let ts = Int64(recordedAt) + 1
                            acks.expect(token: token(prefix, v), timestamp: ts, recordedAt: recordedAt)
                            try await outbox.appendVisitEvent(
                                visit: visit, eventType: "nearby", recordedAt: recordedAt,
                                intent: intent(visit: visit, timestamp: ts, recordedAt: recordedAt, options: options), pool: pool)
                        }
                    }
                }
                try await group.waitForAll()
            }
            var appended = Date().timeIntervalSince1970
            if startWorkerAfterAppends {
                print(
                    String(
                        format: "%@: %d events appended with their intents in %.2f s (%.0f/s), worker stopped", label, count,
                        appended - started, Double(count) / (appended - started)))
                gate.signal()
                appended = Date().timeIntervalSince1970
                let drainStart = appended
                while acks.count < count && Date().timeIntervalSince1970 - drainStart < 300 {
                    try await Task.sleep(nanoseconds: 10_000_000)
                }
                let span = (acks.lastAck ?? drainStart) - drainStart
                services.cancel()
                _ = await services.result
                print(
                    String(
                        format: "%@: one worker drained %d pushes in %.2f s = %.0f pushes/s", label, acks.count, span,
                        Double(acks.count) / span))
                return
            }
            if sender == nil {
                print(
                    String(
                        format: "%@: %d events appended with their intents in %.2f s = %.0f events/s", label, count,
                        appended - started, Double(count) / (appended - started)))
                services.cancel()
                return
            }
            while acks.count < count {
                try await Task.sleep(nanoseconds: 10_000_000)
                if Date().timeIntervalSince1970 - appended > 120 { break }
            }
            services.cancel()
            _ = await services.result
            let delays = acks.delays().sorted()
            let span = (acks.lastAck ?? appended) - started
            func percentile(_ p: Double) -> Double {
                delays.isEmpty ? .nan : delays[min(delays.count - 1, Int((Double(delays.count) * p).rounded(.down)))]
            }
            print(
                String(
                    format:
                        "%@: %d events appended in %.2f s (%.0f/s); %d pushes acknowledged in %.2f s = %.0f pushes/s; append→ack p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                    label, count, appended - started, Double(count) / (appended - started), delays.count, span,
                    Double(delays.count) / span, percentile(0.5) * 1000, percentile(0.99) * 1000, (delays.last ?? .nan) * 1000))
        }
    }

    /// The simulator on a free loopback port, and an APNs client trusting its CA with a fresh P-256 key.
    static func startSimulator() async throws -> (APNsSimulator, APNsClient) {
        var configuration = SimulatorConfiguration()
        configuration.bundleID = "com.example.visits"
        configuration.logger = Logger(label: "apns-sim", metadata: [:])
        let simulator = try APNsSimulator(configuration: configuration)
        let endpoint = try await simulator.start()
        let keyPEM = try generateP256Key()
        let apns = APNsConfiguration(
            baseURLs: [.sandbox: endpoint.url, .production: endpoint.url],
            trustedCertificates: try APNsTrustedCertificates(
                pem: Array(try Data(contentsOf: URL(fileURLWithPath: endpoint.caFile)))),
            signingKey: try APNsSigningKey(pem: keyPEM), keyId: "KEY1234567", teamId: "TEAM123456",
            bundleId: "com.example.visits")
        return (simulator, APNsClient(configuration: apns))
    }

    /// A throwaway ES256 key from the openssl command (PKCS#8 PEM, as Apple's .p8 files are).
    static func generateP256Key() throws -> [UInt8] {
        let outcome = try ChildProcess(
            "/bin/sh", ["-c", "openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt"]
        ).runBlocking()
        guard outcome.status == 0, !outcome.stdout.isEmpty else {
            throw BenchmarkError(message: "openssl could not generate a P-256 key")
        }
        return Array(outcome.stdout.utf8)
    }

    private static func appendOnly(count: Int, writers: Int, url: String) async throws {
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: writers)) { pool in
            let started = Date().timeIntervalSince1970
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for v in stride(from: writer, to: count, by: writers) {
                            _ = try await pool.withTransaction { connection in
                                try EventStore.append(
                                    AppendRequest(
                                        streamName: "visit-append-\(v)",
                                        events: [NewEvent(type: "nearby", data: "{\"kilometresAway\":1.2}")],
                                        recordedAt: Date().timeIntervalSince1970),
                                    on: connection)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let elapsed = Date().timeIntervalSince1970 - started
            print(String(format: "append only: %d events in %.2f s = %.0f events/s", count, elapsed, Double(count) / elapsed))
        }
    }

    private static func intent(visit: String, timestamp: Int64, recordedAt: Double, options: Options) -> PushIntent {
        let body = """
            {"aps":{"timestamp":\(timestamp),"event":"update","content-state":{"technicianName":"Sam",\
            "avatarSymbol":"person.crop.circle","vanDescription":"White van, blue stripe","arrivalStartEpoch":\(timestamp + 300),\
            "arrivalEndEpoch":\(timestamp + 900),"status":"nearby","kilometresAway":1.2},"stale-date":\(timestamp + 120),\
            "relevance-score":100}}
            """
        return PushIntent(
            visitId: visit, customerId: "c-bench", kind: .update, audience: .liveActivities, priority: options.priority,
            apsTimestamp: timestamp, body: Array(body.utf8), staleDate: timestamp + 120, visitVersion: 2,
            eventRecordedAt: recordedAt, pacingSeconds: options.pacingSeconds)
    }

    private static func token(_ prefix: String, _ v: Int) -> String {
        let hex =
            String(UInt64(truncatingIfNeeded: v), radix: 16) + String(UInt64(truncatingIfNeeded: prefix.hashValue), radix: 16)
        return String((hex + String(repeating: "0", count: 64)).prefix(64))
    }

    struct BenchmarkError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}

/// Remembers when each (token, aps.timestamp) was appended and when APNs acknowledged it.
private final class AckLog: Sendable {
    private struct State {
        var expected: [String: Double] = [:]
        var delays: [Double] = []
        var lastAck: Double?
    }
    private let state = Mutex(State())

    func reset() { state.withLock { $0 = State() } }

    func expect(token: String, timestamp: Int64, recordedAt: Double) {
        state.withLock { $0.expected["\(token)/\(timestamp)"] = recordedAt }
    }

    func acknowledged(token: String, timestamp: Int64, at now: Double) {
        state.withLock { s in
            guard let recorded = s.expected.removeValue(forKey: "\(token)/\(timestamp)") else { return }
            s.delays.append(now - recorded)
            s.lastAck = now
        }
    }

    var count: Int { state.withLock { $0.delays.count } }
    var lastAck: Double? { state.withLock { $0.lastAck } }
    func delays() -> [Double] { state.withLock { $0.delays } }
}

/// Wraps the real sender and notes each acknowledgement.
private struct AckRecordingSender: PushSender {
    let inner: any PushSender
    let log: AckLog

    func send(_ push: OutgoingPush) async -> PushOutcome {
        let outcome = await inner.send(push)
        if case .accepted = outcome, let ts = push.bodyTimestamp {
            log.acknowledged(token: push.deviceToken, timestamp: ts, at: Date().timeIntervalSince1970)
        }
        return outcome
    }
}

/// Answers 200 after a fixed latency, without a network: the outbox's own cost.
private struct LoopbackSender: PushSender {
    let latency: Double
    func send(_ push: OutgoingPush) async -> PushOutcome {
        if latency > 0 { try? await Task.sleep(nanoseconds: UInt64(latency * 1e9)) }
        return .accepted(latency: latency)
    }
}
