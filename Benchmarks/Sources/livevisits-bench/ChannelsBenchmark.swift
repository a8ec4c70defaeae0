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

/// `livevisits-bench channels`: the same state changes delivered to N visits each followed through one
/// broadcast channel (contract §7), and to N visits each followed by K Live Activity tokens, through the real
/// outbox worker and APNs client to the project's simulator (HTTP/2 over TLS, both listeners) on a scratch
/// database. Prints, for each: APNs requests per state change, events/s end to end (the append of the
/// first event of a round to APNs' acknowledgement of its last push) and the p50/p99 delay of an event
/// (append to the acknowledgement of its last push); and channel creations/s (`ChannelStore.channel`: the
/// database claim, APNs' create and the stored id).
///
/// State changes go in rounds: one event per visit, all delivered before the next round, so no push is
/// superseded and both sides get every state.
enum ChannelsBenchmark {
    static let summary =
        "N visits followed through a channel vs N visits with K tokens each: APNs requests per state change, events/s, p99 (--visits N --tokens K --rounds R)"

    static let syntax = CommandSyntax(
        command: "livevisits-bench channels", summary: summary,
        options: [
            .value("--visits", "N", "visits on each side (default 1000)"),
            .value("--tokens", "K", "Live Activity tokens per visit on the token side (default 10)"),
            .value("--rounds", "R", "state changes per visit (default 3)"),
            .value("--writers", "N", "concurrent appenders and channel creators (default 8)"),
        ],
        details: "Needs LIVEVISITS_DATABASE_URL; a scratch database is created there and dropped.")

    static func main(arguments: [String]) async throws {
        let parsed = try syntax.parse(arguments)
        let visits = try parsed.integer("--visits", in: 1...100_000) ?? 1000
        let tokens = try parsed.integer("--tokens", in: 1...1000) ?? 10
        let rounds = try parsed.integer("--rounds", in: 1...100) ?? 3
        let writers = try parsed.integer("--writers", in: 1...64) ?? 8
        let serverURL = try BenchmarkEnvironment.serverURL()
        var settings = SimulatorConfiguration()
        settings.bundleID = "com.example.visits"
        settings.maximumRecordedDeliveries = 1000
        settings.logger = Logger(label: "apns-sim")
        let simulator = try APNsSimulator(configuration: settings)
        let endpoint = try await simulator.start()
        var apns = APNsConfiguration(
            baseURLs: [.sandbox: endpoint.url, .production: endpoint.url],
            trustedCertificates: try APNsTrustedCertificates(
                pem: Array(try Data(contentsOf: URL(fileURLWithPath: endpoint.caFile)))),
            signingKey: try APNsSigningKey(pem: try OutboxBenchmark.generateP256Key()), keyId: "KEY1234567",
            teamId: "TEAM123456", bundleId: "com.example.visits")
        apns.channelsBaseURLs = [.sandbox: endpoint.channelsURL, .production: endpoint.channelsURL]
        let client = APNsClient(configuration: apns, metrics: Metrics())
        do {
            try await ScratchDatabase.with(serverURL: serverURL, migrations: URL(fileURLWithPath: "Migrations")) { database in
                try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: writers + 6)) { pool in
                    print(
                        "channels benchmark: \(visits) visits through a channel vs \(visits) visits × \(tokens) tokens, \(rounds) state changes each; one outbox worker, APNs client → simulator"
                    )
                    let service = APNsChannelService(client: client)
                    // Channel creations.
                    var configuration = OutboxConfiguration()
                    configuration.channelCreationTimeoutSeconds = 60
                    let store = ChannelStore(
                        pool: pool, configuration: configuration, maximumChannels: 10_000, metrics: Metrics())
                    let created = Date().timeIntervalSince1970
                    let channelOf = try await withThrowingTaskGroup(of: [(String, String)].self) { group in
                        for writer in 0..<writers {
                            group.addTask {
                                var out: [(String, String)] = []
                                for v in stride(from: writer, to: visits, by: writers) {
                                    let visit = "ch-\(v)"
                                    out.append(
                                        (
                                            try await store.channel(
                                                visitId: visit, customerId: "c-bench", environment: .sandbox, service: service),
                                            visit
                                        ))
                                }
                                return out
                            }
                        }
                        var all: [String: String] = [:]
                        for try await part in group { for (id, visit) in part { all[id] = visit } }
                        return all
                    }
                    let creationSeconds = Date().timeIntervalSince1970 - created
                    print(
                        String(
                            format:
                                "channel creations: %d in %.2f s = %.0f creations/s (claim in PostgreSQL, APNs create, id stored)",
                            channelOf.count, creationSeconds, Double(channelOf.count) / creationSeconds))
                    // Token side: K activities per visit.
                    var tokenOf: [String: String] = [:]
                    let registry = TokenRegistry()
                    let tokenPairs = (0..<visits).flatMap { v in (0..<tokens).map { (v, $0) } }
                    for (v, k) in tokenPairs { tokenOf[token(v, k)] = "tk-\(v)" }
                    try await pool.withTransaction { c in
                        for (v, k) in tokenPairs {
                            try registry.registerLiveActivity(
                                visitId: "tk-\(v)", activityId: "a-\(k)", pushToken: token(v, k), environment: .sandbox, on: c)
                        }
                    }
                    let channelSide = try await side(
                        "channel", prefix: "ch", visits: visits, pushesPerEvent: 1, rounds: rounds, writers: writers, pool: pool,
                        url: database.url, client: client, visitOf: channelOf)
                    let tokenSide = try await side(
                        "tokens", prefix: "tk", visits: visits, pushesPerEvent: tokens, rounds: rounds, writers: writers,
                        pool: pool, url: database.url, client: client, visitOf: tokenOf)
                    print(
                        String(
                            format:
                                "ratio: APNs requests per state change %.1f : %.1f; events/s channel/tokens = %.2f; p99 channel/tokens = %.2f",
                            channelSide.requestsPerEvent, tokenSide.requestsPerEvent,
                            channelSide.eventsPerSecond / tokenSide.eventsPerSecond,
                            channelSide.p99 / tokenSide.p99))
                }
            }
        } catch {
            await client.shutdown()
            await simulator.stop()
            throw error
        }
        await client.shutdown()
        await simulator.stop()
    }

    struct Figures {
        var requestsPerEvent: Double
        var eventsPerSecond: Double
        var p99: Double
    }

    /// R rounds of one event per visit, each appended with its push intents (as the command handler does) and
    /// delivered by one worker before the next round.
    private static func side(
        _ label: String, prefix: String, visits: Int, pushesPerEvent: Int, rounds: Int, writers: Int, pool: PostgresPool,
        url: String, client: APNsClient, visitOf: [String: String]
    ) async throws -> Figures {
        let log = EventLog(visitOf: visitOf)
        let sender = CountingSender(inner: APNsPushSender(client: client), log: log)
        let worker = OutboxWorker(pool: pool, sender: sender, metrics: Metrics())
        let listener = worker.listener(url: url)
        let services = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await listener.run() }
                group.addTask { try await worker.run() }
                try await group.waitForAll()
            }
        }
        try await Task.sleep(nanoseconds: 300_000_000)  // LISTEN established
        let outbox = Outbox(pool: pool)
        let base = Int64(Date().timeIntervalSince1970) + 10
        var busy = 0.0
        let statuses = ["enRoute", "nearby", "onSite", "finishing"]
        for round in 0..<rounds {
            let ts = base + Int64(round)
            let status = statuses[round % statuses.count]
            let started = Date().timeIntervalSince1970
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for v in stride(from: writer, to: visits, by: writers) {
                            let visit = "\(prefix)-\(v)"
                            let recordedAt = Date().timeIntervalSince1970
                            log.expect(visit: visit, timestamp: ts, pushes: pushesPerEvent, recordedAt: recordedAt)
                            try await outbox.appendVisitEvent(
                                visit: visit, eventType: status, recordedAt: recordedAt,
                                intent: intent(visit: visit, status: status, timestamp: ts, recordedAt: recordedAt), pool: pool)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let deadline = Date().timeIntervalSince1970 + 300
            while log.completed < visits * (round + 1) && Date().timeIntervalSince1970 < deadline {
                try await Task.sleep(nanoseconds: 5_000_000)
            }
            busy += (log.lastCompletion ?? started) - started
        }
        services.cancel()
        _ = await services.result
        let events = visits * rounds
        let delays = log.delays().sorted()
        func percentile(_ p: Double) -> Double {
            delays.isEmpty ? .nan : delays[min(delays.count - 1, Int((Double(delays.count) * p).rounded(.down)))]
        }
        let figures = Figures(
            requestsPerEvent: Double(log.requests) / Double(events), eventsPerSecond: Double(delays.count) / busy,
            p99: percentile(0.99))
        print(
            String(
                format:
                    "%@: %d state changes (%d visits × %d), %d APNs requests = %.2f per state change; %d delivered in %.2f s = %.0f events/s end to end; append→last ack p50 %.1f ms, p99 %.1f ms",
                label, events, visits, rounds, log.requests, figures.requestsPerEvent, delays.count, busy,
                figures.eventsPerSecond,
                percentile(0.5) * 1000, figures.p99 * 1000))
        return figures
    }

    private static func intent(visit: String, status: String, timestamp: Int64, recordedAt: Double) -> PushIntent {
        let body = """
            {"aps":{"timestamp":\(timestamp),"event":"update","content-state":{"technicianName":"Sam",\
            "avatarSymbol":"person.crop.circle","vanDescription":"White van, blue stripe","arrivalStartEpoch":\(timestamp + 300),\
            "arrivalEndEpoch":\(timestamp + 900),"status":"\(status)","kilometresAway":1.2},"stale-date":\(timestamp + 600),\
            "relevance-score":80}}
            """
        return PushIntent(
            visitId: visit, customerId: "c-bench", kind: .update, audience: .liveActivities, priority: 5,
            apsTimestamp: timestamp, body: Array(body.utf8), staleDate: timestamp + 600, visitVersion: 2,
            eventRecordedAt: recordedAt)
    }

    private static func token(_ v: Int, _ k: Int) -> String {
        let hex = String(v, radix: 16) + "f" + String(k, radix: 16) + "e"
        return String((hex + String(repeating: "a", count: 64)).prefix(64))
    }
}

/// Per event (visit, aps.timestamp): when it was appended and how many pushes are still unacknowledged.
private final class EventLog: Sendable {
    private struct State {
        var pending: [String: (recordedAt: Double, left: Int)] = [:]
        var delays: [Double] = []
        var lastCompletion: Double?
        var requests = 0
    }
    private let state = Mutex(State())
    /// Channel id or token → visit.
    let visitOf: [String: String]

    init(visitOf: [String: String]) { self.visitOf = visitOf }

    func expect(visit: String, timestamp: Int64, pushes: Int, recordedAt: Double) {
        state.withLock { $0.pending["\(visit)/\(timestamp)"] = (recordedAt, pushes) }
    }

    func sent() { state.withLock { $0.requests += 1 } }

    func acknowledged(destination: String, timestamp: Int64, at now: Double) {
        guard let visit = visitOf[destination] else { return }
        state.withLock { s in
            let key = "\(visit)/\(timestamp)"
            guard var entry = s.pending[key] else { return }
            entry.left -= 1
            if entry.left <= 0 {
                s.pending.removeValue(forKey: key)
                s.delays.append(now - entry.recordedAt)
                s.lastCompletion = now
            } else {
                s.pending[key] = entry
            }
        }
    }

    var completed: Int { state.withLock { $0.delays.count } }
    var requests: Int { state.withLock { $0.requests } }
    var lastCompletion: Double? { state.withLock { $0.lastCompletion } }
    func delays() -> [Double] { state.withLock { $0.delays } }
}

/// The real sender, counting every APNs request and noting acknowledgements by destination.
private struct CountingSender: PushSender {
    let inner: any PushSender
    let log: EventLog

    func send(_ push: OutgoingPush) async -> PushOutcome {
        log.sent()
        let outcome = await inner.send(push)
        if case .accepted = outcome, let ts = push.bodyTimestamp {
            log.acknowledged(destination: push.channelId ?? push.deviceToken, timestamp: ts, at: Date().timeIntervalSince1970)
        }
        return outcome
    }
}
