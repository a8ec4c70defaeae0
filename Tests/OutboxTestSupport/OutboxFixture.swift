import Foundation
import LiveActivityLedger
import Outbox
import Postgres
import Runtime
import Synchronization
import TestSupport

/// A scratch database with the outbox's pieces on it, and intent builders.
public struct OutboxFixture {
    public let url: String
    public let pool: PostgresPool
    public let clock: any WallClock
    public let configuration: OutboxConfiguration
    public let outbox: Outbox
    public let registry: TokenRegistry
    public let store: OutboxStore

    /// Test defaults: short waits so retries and polls happen in milliseconds.
    public static var fastConfiguration: OutboxConfiguration {
        var c = OutboxConfiguration()
        c.backoff = Backoff(baseSeconds: 0.02, capSeconds: 1)
        c.pollIntervalSeconds = 0.05
        c.leaseSeconds = 5
        c.reapIntervalSeconds = 0.2
        c.configurationPauseSeconds = 0.2
        return c
    }

    public static func make(clock: any WallClock = SystemClock(), configuration: OutboxConfiguration = fastConfiguration)
        async throws
        -> OutboxFixture
    {
        let (url, pool) = try await TestDatabase.create(poolSize: 8)
        return OutboxFixture(
            url: url, pool: pool, clock: clock, configuration: configuration,
            outbox: Outbox(pool: pool, configuration: configuration, clock: clock),
            registry: TokenRegistry(clock: clock), store: OutboxStore(pool: pool, clock: clock))
    }

    public func worker(
        _ sender: any PushSender, metrics: Metrics = Metrics(), configuration: OutboxConfiguration? = nil,
        logger: Logger = Logger(label: "outbox")
    ) -> OutboxWorker {
        OutboxWorker(
            pool: pool, sender: sender, configuration: configuration ?? self.configuration, clock: clock, metrics: metrics,
            logger: logger)
    }

    public func enqueue(_ intents: PushIntent...) async throws -> Outbox.EnqueueResult {
        let outbox = self.outbox
        let result = try await pool.withTransaction { try outbox.enqueue(intents, on: $0) }
        outbox.committed()
        return result
    }

    @discardableResult
    public func registerActivity(
        visit: String, activity: String, token: String, device: String? = nil, environment: PushEnvironment = .sandbox
    ) async throws
        -> TokenRegistry.Registration
    {
        let registry = self.registry
        return try await pool.withConnection {
            try registry.registerLiveActivity(
                visitId: visit, activityId: activity, pushToken: token, environment: environment, deviceId: device, on: $0)
        }
    }

    public func registerStart(customer: String, device: String, token: String) async throws {
        let registry = self.registry
        _ = try await pool.withConnection {
            try registry.registerPushToStart(
                customerId: customer, deviceId: device, pushToken: token, environment: .production, on: $0)
        }
    }

    /// The ledger as the fixture's workers see it (their configuration's renewal, lifetime, cap and budget).
    public var ledger: LiveActivityLedger {
        LiveActivityLedger(
            settings: LiveActivityLedger.Settings(
                renewalSeconds: configuration.activityRenewalSeconds, lifetimeSeconds: configuration.activityLifetimeSeconds,
                maxRenewals: configuration.maxRenewals, priority10PerHour: configuration.priority10PerHour,
                priority10PerHourFrequent: configuration.priority10PerHourFrequent),
            clock: clock, metrics: Metrics())
    }

    /// A device's ordinary notification token (the fallback notifications go to it).
    public func registerNotification(customer: String, device: String, token: String) async throws {
        let registry = self.registry
        _ = try await pool.withConnection {
            try registry.register(
                .notificationDevice(customerId: customer, deviceId: device), pushToken: token, environment: .production,
                on: $0)
        }
    }

    /// What the app reports for an activity (`activityStateUpdates`).
    @discardableResult
    public func report(_ state: ReportedActivityState, visit: String, activity: String) async throws
        -> LiveActivityLedger.ReportOutcome
    {
        let ledger = self.ledger
        return try await pool.withTransaction { try ledger.report(state, visitId: visit, activityId: activity, on: $0) }
    }

    /// The visit's ledger (customer `c-1`; `staleDate` far ahead unless given).
    public func entries(visit: String, customer: String = "c-1", ended: Bool = false, staleDate: Int64? = nil) async throws
        -> [LiveActivityEntry]
    {
        let ledger = self.ledger
        let facts = LiveActivityLedger.VisitFacts(visitId: visit, customerId: customer, ended: ended, staleDate: staleDate)
        return try await pool.withConnection { try ledger.entries(of: facts, on: $0) }
    }

    public func setPreferences(customer: String, device: String, enabled: Bool, frequent: Bool = true) async throws {
        let registry = self.registry
        try await pool.withConnection {
            try registry.setPreferences(
                customerId: customer, deviceId: device, liveActivitiesEnabled: enabled, frequentPushesEnabled: frequent,
                on: $0)
        }
    }

    public func count(_ state: DeliveryState) async throws -> Int {
        try await store.depth()[state] ?? 0
    }

    /// Runs `runOnce` until nothing is pending or sending, polling while retries come due (on a system
    /// clock); throws when that takes longer than `seconds`.
    public func drain(_ worker: OutboxWorker, within seconds: Double = 60) async throws {
        try await eventually("the outbox drained", within: seconds) {
            while try await count(.pending) + count(.sending) > 0 {
                if try await worker.runOnce() == 0 { return false }
            }
            return true
        }
    }

    /// Runs `runOnce` until a claim finds nothing due now (what is due later stays pending).
    public func runDue(_ worker: OutboxWorker) async throws {
        while try await worker.runOnce() > 0 {}
    }

    public func close() async { await pool.close() }
}

/// The lines a `Logger` wrote (give `logger` to the code under test).
public final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    public init() {}
    public var logger: Logger { Logger(label: "outbox") { [self] line in self.lines.withLock { $0.append(line) } } }
    public var all: [String] { lines.withLock { $0 } }
}

/// A hex token unique to `name`.
public func token(_ name: String) -> String {
    var hex = ""
    for byte in Array(name.utf8) { hex += String(format: "%02x", byte) }
    while hex.count < 64 { hex += "0" }
    return String(hex.prefix(64))
}

public func body(_ kind: PushIntent.Kind, timestamp: Int64, note: String = "") -> [UInt8] {
    Array("{\"aps\":{\"timestamp\":\(timestamp),\"event\":\"\(kind.rawValue)\",\"content-state\":{\"note\":\"\(note)\"}}}".utf8)
}

public func update(
    _ visit: String, customer: String = "c-1", timestamp: Int64, stale: Int64? = nil, version: Int64 = 2,
    audience: PushIntent.Audience = .liveActivities, note: String = ""
) -> PushIntent {
    PushIntent(
        visitId: visit, customerId: customer, kind: .update, audience: audience, priority: 5, apsTimestamp: timestamp,
        body: body(.update, timestamp: timestamp, note: note), staleDate: stale ?? (timestamp + 7200), visitVersion: version,
        eventRecordedAt: Date().timeIntervalSince1970)
}

public func end(_ visit: String, customer: String = "c-1", timestamp: Int64, version: Int64 = 9) -> PushIntent {
    PushIntent(
        visitId: visit, customerId: customer, kind: .end, audience: .liveActivities, priority: 10, apsTimestamp: timestamp,
        body: body(.end, timestamp: timestamp), visitVersion: version, eventRecordedAt: Date().timeIntervalSince1970)
}

public func start(
    _ visit: String, customer: String = "c-1", timestamp: Int64, notBefore: Double? = nil, arrival: Int64? = nil,
    audience: PushIntent.Audience = .pushToStartTokens
) -> PushIntent {
    PushIntent(
        visitId: visit, customerId: customer, kind: .start, audience: audience, priority: 10, apsTimestamp: timestamp,
        body: body(.start, timestamp: timestamp), visitVersion: 1, eventRecordedAt: Date().timeIntervalSince1970,
        notBefore: notBefore, arrivalWindowStart: arrival)
}
