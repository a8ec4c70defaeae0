import Foundation
import LiveActivityLedger
import Postgres
import Runtime

/// The fleet's broadcast channels (contract §7) in `channels` (migration 0013): one per visit and
/// environment, created through a `ChannelService` with the creation claimed in the database first (a
/// row in state `creating`), so concurrent requests from any process make one create at APNs and get one
/// id; their deletion after the visit's end; reconciliation with what APNs holds.
///
/// A channel's broadcasts are ordinary deliveries to the target `channel["<visit>","<environment>"]`
/// (`Outbox.enqueue` resolves it beside the visit's Live Activities; the claim reads the id from here).
public struct ChannelStore: Sendable {
    public let pool: PostgresPool
    public let configuration: OutboxConfiguration
    /// The most channels the fleet keeps per environment (`LIVEVISITS_MAX_CHANNELS`).
    public let maximumChannels: Int
    private let clock: any WallClock
    private let metrics: Metrics
    private let logger: Logger

    public static let defaultMaximumChannels = 9500

    public init(
        pool: PostgresPool, configuration: OutboxConfiguration = OutboxConfiguration(),
        maximumChannels: Int = ChannelStore.defaultMaximumChannels, clock: any WallClock = SystemClock(),
        metrics: Metrics = .shared, logger: Logger = Logger(label: "channels")
    ) {
        self.pool = pool
        self.configuration = configuration
        self.maximumChannels = maximumChannels
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    /// A channel's lifecycle state as `livevisits channels list` shows it.
    public enum State: String, Sendable, Hashable, CaseIterable {
        case creating, active, ended, deleting
    }

    /// One channel row.
    public struct Channel: Sendable, Hashable {
        public var visitId: String
        public var environment: PushEnvironment
        /// nil while it is being created.
        public var channelId: String?
        public var state: State
    }

    /// The delivery target of a visit's channel in one environment.
    public static func target(visitId: String, environment: PushEnvironment) -> String {
        "channel" + "[\(jsonString(visitId)),\(jsonString(environment.rawValue))]"
    }

    /// `json_build_array`'s rendering of a string element (as the SQL side builds targets).
    private static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    // MARK: creating

    /// Why a channel could not be had.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public enum Code: String, Sendable, Hashable {
            /// The fleet holds `maximumChannels` in the environment, or APNs creates no more.
            case exhausted
            /// APNs did not create it (unavailable, refused, or an answer we could not use); nothing stored.
            case unavailable
        }
        public var code: Code
        public var message: String
        public var description: String { "\(code.rawValue): \(message)" }
    }

    /// The visit's channel in `environment`: the stored one, or a new one created at APNs. The creation
    /// is claimed first (a `creating` row, under a per-environment lock that keeps the fleet's count
    /// exact), so of concurrent callers in any process exactly one calls APNs and the others wait for its
    /// id. A claim abandoned (its process died before storing the id) is taken over after
    /// `channelCreationTimeoutSeconds`; what APNs created for it is an orphan that reconciliation deletes.
    /// Throws `Refusal` (`exhausted`, `unavailable`) or a database error; stores nothing on failure.
    public func channel(
        visitId: String, customerId: String, environment: PushEnvironment, service: any ChannelService
    ) async throws -> String {
        let deadline = clock.now() + 2 * configuration.channelCreationTimeoutSeconds + 5
        var unavailable = 0
        while true {
            switch try await claim(visitId: visitId, customerId: customerId, environment: environment) {
            case .existing(let id):
                return id
            case .exhausted:
                countCreation("exhausted")
                throw Refusal(code: .exhausted, message: "the fleet holds \(maximumChannels) channels in \(environment.rawValue)")
            case .wait:
                guard clock.now() < deadline else {
                    throw Refusal(code: .unavailable, message: "another request's channel creation did not finish")
                }
                try await clock.sleep(seconds: 0.05)
            case .create(let claimedAt):
                switch await service.createChannel(environment: environment) {
                case .success(let id):
                    if try await store(id, visitId: visitId, environment: environment, claimedAt: claimedAt) {
                        countCreation("created")
                        logger.info(
                            "broadcast channel created",
                            ["visit.id": visitId, "apns.environment": environment.rawValue, "apns.channel_id": id])
                        return id
                    }
                    // Our claim was taken over meanwhile: the channel we got is nobody's. Delete it (reconciliation
                    // would, later) and read what the visit has now.
                    _ = await service.deleteChannel(id, environment: environment)
                case .failure(let failure):
                    try await release(visitId: visitId, environment: environment, claimedAt: claimedAt)
                    if failure.kind == .exhausted {
                        countCreation("exhausted")
                        throw Refusal(code: .exhausted, message: "APNs creates no more channels (\(failure.reason))")
                    }
                    unavailable += 1
                    guard failure.kind == .retryable, unavailable < 3, clock.now() < deadline else {
                        countCreation("failed")
                        throw Refusal(code: .unavailable, message: "APNs did not create the channel: \(failure.reason)")
                    }
                    try await clock.sleep(seconds: configuration.backoff.delay(retry: unavailable - 1) / 4)
                }
            }
        }
    }

    private func countCreation(_ result: String) {
        metrics.increment(
            "livevisits_channel_creations_total", help: "Broadcast channel creations by result.", labels: ["result": result])
    }

    private enum Claim: Sendable {
        case existing(String)
        case create(claimedAt: Double)
        case wait
        case exhausted
    }

    private func claim(visitId: String, customerId: String, environment: PushEnvironment) async throws -> Claim {
        let now = clock.now()
        let stale = now - configuration.channelCreationTimeoutSeconds
        let maximum = maximumChannels
        let env = environment.rawValue
        let target = ChannelStore.target(visitId: visitId, environment: environment)
        return try await pool.withTransaction { c -> Claim in
            // One claim at a time per environment across the fleet: the count below stays exact.
            _ = try c.query("SELECT pg_advisory_xact_lock(hashtext('livevisits_channels'), hashtext(\(env)))")
            if let row = try c.query(
                """
                SELECT channel_id, state, claimed_at FROM channels
                WHERE visit_id = \(visitId) AND environment = \(env) FOR UPDATE
                """
            ).first {
                if let id = row["channel_id"] { return .existing(id) }
                guard try row.double("claimed_at") < stale else { return .wait }
                // Abandoned: its process died between claiming and storing the id. Claim it again.
                _ = try c.query(
                    "UPDATE channels SET claimed_at = \(now) WHERE visit_id = \(visitId) AND environment = \(env)")
                return .create(claimedAt: now)
            }
            let held = try c.query("SELECT count(*) AS n FROM channels WHERE environment = \(env)").first?.int("n") ?? 0
            guard held < maximum else { return .exhausted }
            _ = try c.query(
                """
                INSERT INTO channels (visit_id, environment, customer_id, target, state, claimed_at)
                VALUES (\(visitId), \(env), \(customerId), \(target), 'creating', \(now))
                """)
            return .create(claimedAt: now)
        }
    }

    /// Stores the id APNs gave, if the claim is still ours.
    private func store(_ id: String, visitId: String, environment: PushEnvironment, claimedAt: Double) async throws -> Bool {
        let now = clock.now()
        let env = environment.rawValue
        return try await pool.withConnection { c in
            try c.query(
                """
                UPDATE channels SET channel_id = \(id), state = 'active', created_at = \(now)
                WHERE visit_id = \(visitId) AND environment = \(env) AND state = 'creating' AND claimed_at = \(claimedAt)
                RETURNING 1
                """
            ).count == 1
        }
    }

    /// Gives up a claim (APNs created nothing).
    private func release(visitId: String, environment: PushEnvironment, claimedAt: Double) async throws {
        let env = environment.rawValue
        _ = try await pool.withConnection { c in
            try c.query(
                """
                DELETE FROM channels
                WHERE visit_id = \(visitId) AND environment = \(env) AND state = 'creating' AND claimed_at = \(claimedAt)
                """)
        }
    }

    // MARK: reading

    /// Every channel row, by visit and environment (`livevisits channels list`).
    public func list(limit: Int = 10_000) async throws -> [Channel] {
        try await pool.withConnection { c in
            try c.query(
                """
                SELECT visit_id, environment, channel_id, state FROM channels
                ORDER BY visit_id, environment LIMIT \(limit)
                """
            ).rows.map { row in
                Channel(
                    visitId: try row.string("visit_id"),
                    environment: PushEnvironment(rawValue: try row.string("environment")) ?? .production,
                    channelId: row["channel_id"], state: State(rawValue: try row.string("state")) ?? .active)
            }
        }
    }

    /// Adds `livevisits_channels{environment,state}`, read from the database at scrape time.
    public func registerCollector() {
        let pool = self.pool
        metrics.addCollector {
            guard
                let rows = try? await pool.withConnection({ c in
                    try c.query("SELECT environment, state, count(*) AS n FROM channels GROUP BY environment, state").rows
                        .map { (try $0.string("environment"), try $0.string("state"), try $0.int("n")) }
                })
            else { return "" }
            var counts: [String: Int] = [:]
            for (environment, state, n) in rows { counts[environment + "/" + state] = n }
            var text = "# HELP livevisits_channels Broadcast channels by environment and state.\n"
            text += "# TYPE livevisits_channels gauge\n"
            for environment in PushEnvironment.allCases {
                for state in State.allCases {
                    let n = counts[environment.rawValue + "/" + state.rawValue] ?? 0
                    text += "livevisits_channels{environment=\"\(environment.rawValue)\",state=\"\(state.rawValue)\"} \(n)\n"
                }
            }
            return text
        }
    }

    // MARK: the worker's side

    /// Forgets a channel APNs no longer knows (`BadChannelId`, `ChannelNotRegistered`): its row goes (the
    /// visit lists it no more; a later PUT creates a new one) and its pending broadcasts are cancelled.
    static func forget(target: String, channelId: String?, reason: String, now: Double, on connection: PostgresConnection)
        throws -> Bool
    {
        let rows = try connection.query(
            """
            WITH forgotten AS (
                DELETE FROM channels WHERE target = \(target) AND (\(channelId)::text IS NULL OR channel_id = \(channelId))
                RETURNING target
            ),
            cancelled AS (
                UPDATE deliveries d SET state = 'cancelled', last_reason = 'channel ' || \(reason), finished_at = \(now),
                       lease_token = NULL
                FROM forgotten f WHERE d.target = f.target AND d.state = 'pending'
                RETURNING d.id
            )
            SELECT (SELECT count(*) FROM forgotten) AS forgotten
            """)
        return try rows.first?.int("forgotten") ?? 0 > 0
    }

    /// The channels whose `end` broadcast APNs just acknowledged: ended, due for deletion after
    /// `deleteAfter` seconds.
    static func ended(targets: [String], now: Double, deleteAfter: Double, on connection: PostgresConnection) throws {
        guard !targets.isEmpty else { return }
        _ = try connection.query(
            """
            UPDATE channels SET state = 'ended', ended_at = \(now), next_delete_at = \(now + deleteAfter)
            WHERE target = ANY (\(targets)::text[]) AND state = 'active'
            """)
    }
}
