import Foundation
import LiveActivityLedger
import Postgres
import Runtime

/// The after-life of broadcast channels (contract §7): deleting a channel at APNs
/// `channelDeleteAfterEndSeconds` after its visit's `end` broadcast was acknowledged (retried with
/// backoff), and reconciling the fleet's channels with what APNs lists — orphans deleted (never while a
/// creation is in flight in that environment), channels APNs no longer lists forgotten.
///
/// The worker runs `deleteDue` beside its reaper and `reconcile` every `channelReconcileIntervalSeconds`
/// (`ChannelReconciliationService`); `livevisits channels reconcile` runs `reconcile` once.
public struct ChannelLifecycle: Sendable {
    public let pool: PostgresPool
    public let service: any ChannelService
    public let configuration: OutboxConfiguration
    private let clock: any WallClock
    private let metrics: Metrics
    private let logger: Logger

    public init(
        pool: PostgresPool, service: any ChannelService, configuration: OutboxConfiguration = OutboxConfiguration(),
        clock: any WallClock = SystemClock(), metrics: Metrics = .shared, logger: Logger = Logger(label: "channels")
    ) {
        self.pool = pool
        self.service = service
        self.configuration = configuration
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    // MARK: deletion

    /// Deletes the channels due (ended `channelDeleteAfterEndSeconds` ago, or a failed delete's retry).
    /// Each is claimed (`deleting`, due again after the lease) so that two workers never delete one
    /// twice; a delete APNs answers (or a channel it no longer knows) removes the row, a failed one is
    /// due again after its backoff. Returns how many were deleted.
    @discardableResult
    public func deleteDue(limit: Int = 100) async throws -> Int {
        let now = clock.now()
        let lease = configuration.leaseSeconds
        let due = try await pool.withConnection { c in
            try c.query(
                """
                UPDATE channels ch SET state = 'deleting', next_delete_at = \(now + lease), delete_attempts = ch.delete_attempts + 1
                FROM (SELECT visit_id, environment FROM channels
                      WHERE state IN ('ended', 'deleting') AND next_delete_at <= \(now)
                      ORDER BY next_delete_at LIMIT \(limit) FOR UPDATE SKIP LOCKED) d
                WHERE ch.visit_id = d.visit_id AND ch.environment = d.environment
                RETURNING ch.visit_id, ch.environment, ch.channel_id, ch.delete_attempts
                """
            ).rows.map {
                (
                    try $0.string("visit_id"), PushEnvironment(rawValue: try $0.string("environment")) ?? .production,
                    try $0.string("channel_id"), try $0.int("delete_attempts")
                )
            }
        }
        var deleted = 0
        for (visitId, environment, channelId, attempts) in due {
            let result = await service.deleteChannel(channelId, environment: environment)
            let answeredAt = clock.now()
            switch result.gone {
            case nil:
                _ = try await pool.withConnection { c in
                    try c.query("DELETE FROM channels WHERE channel_id = \(channelId) AND state = 'deleting'")
                }
                deleted += 1
                count("deleted")
                logger.info(
                    "broadcast channel deleted after its visit ended",
                    ["visit.id": visitId, "apns.environment": environment.rawValue, "apns.channel_id": channelId])
            case let failure?:
                let retryAt = answeredAt + configuration.backoff.delay(retry: max(0, attempts - 1))
                _ = try await pool.withConnection { c in
                    try c.query(
                        """
                        UPDATE channels SET next_delete_at = \(retryAt), last_error = \(failure.reason)
                        WHERE channel_id = \(channelId) AND state = 'deleting'
                        """)
                }
                count("delete_failed")
                logger.warning(
                    "deleting a broadcast channel failed; retrying with backoff",
                    [
                        "visit.id": visitId, "apns.environment": environment.rawValue, "apns.reason": failure.reason,
                        "channels.retry_at": String(retryAt),
                    ])
            }
        }
        return deleted
    }

    private func count(_ result: String) {
        metrics.increment(
            "livevisits_channel_lifecycle_total", help: "Broadcast channel deletions and reconciliation results.",
            labels: ["result": result])
    }

    // MARK: reconciliation

    /// What one environment's reconciliation did.
    public struct Reconciliation: Sendable, Hashable {
        public var environment: PushEnvironment
        /// Channels APNs lists that a visit owns.
        public var kept = 0
        /// Channels APNs lists that no visit owns, deleted at APNs.
        public var deletedOrphans = 0
        /// Channels the fleet held that APNs does not list, forgotten.
        public var forgot = 0
        /// Orphans left alone because a creation was in flight in the environment.
        public var spared = 0
        /// The line `livevisits channels reconcile` prints.
        public var line: String {
            "channels reconcile: \(environment.rawValue): kept \(kept), deleted orphans \(deletedOrphans), forgot \(forgot)"
        }
    }

    /// Reconciles one environment with APNs' list (`GET …/all-channels`): channels no visit owns are
    /// deleted at APNs, unless a creation is in flight (its id is not stored yet, so
    /// any unowned channel may be it; the next pass deletes what is still unowned); channels the fleet
    /// holds that APNs does not list are forgotten. A creation claimed longer ago than
    /// `channelCreationTimeoutSeconds` without an id was abandoned (its process died): its claim is
    /// removed first, so what APNs created for it counts as an orphan.
    ///
    /// Throws when APNs' list cannot be read (nothing is changed then).
    public func reconcile(_ environment: PushEnvironment) async throws -> Reconciliation {
        var result = Reconciliation(environment: environment)
        let env = environment.rawValue
        let stale = clock.now() - configuration.channelCreationTimeoutSeconds
        _ = try await pool.withConnection { c in
            try c.query(
                "DELETE FROM channels WHERE environment = \(env) AND state = 'creating' AND claimed_at < \(stale)")
        }
        // The list first, then the database: a creation that stored its id after the list was taken is
        // owned by then, and one still in flight holds its `creating` row.
        let listed: [String]
        switch await service.listChannels(environment: environment) {
        case .success(let ids): listed = ids
        case .failure(let failure): throw failure
        }
        // Ownership and creations in flight are read across both environments: ids are unique, and one
        // simulator may serve both (a channel of the other environment is then never taken for an orphan).
        let (owned, ownedAnywhere, inFlight) = try await pool.withConnection { c -> ([String], Set<String>, Int) in
            var owned: [String] = []
            var anywhere = Set<String>()
            for row in try c.query("SELECT channel_id, environment FROM channels WHERE channel_id IS NOT NULL") {
                let id = try row.string("channel_id")
                anywhere.insert(id)
                if try row.string("environment") == env { owned.append(id) }
            }
            let creating = try c.query("SELECT count(*) AS n FROM channels WHERE state = 'creating'").first?.int("n") ?? 0
            return (owned, anywhere, creating)
        }
        let listedSet = Set(listed)
        result.kept = Set(owned).intersection(listedSet).count
        for orphan in listed where !ownedAnywhere.contains(orphan) {
            if inFlight > 0 {
                result.spared += 1
                continue
            }
            switch await service.deleteChannel(orphan, environment: environment).gone {
            case nil:
                result.deletedOrphans += 1
                count("orphan_deleted")
            case let failure?:
                logger.warning(
                    "deleting an orphaned channel failed; the next reconciliation tries again",
                    ["apns.environment": env, "apns.reason": failure.reason])
            }
        }
        let now = clock.now()
        let vanished = owned.filter { !listedSet.contains($0) }
        if !vanished.isEmpty {
            result.forgot = try await pool.withConnection { c in
                var forgot = 0
                for id in vanished {
                    let target = try c.query("SELECT target FROM channels WHERE channel_id = \(id)").first?.string("target")
                    guard let target else { continue }
                    if try ChannelStore.forget(
                        target: target, channelId: id, reason: "not listed by APNs", now: now, on: c)
                    {
                        forgot += 1
                    }
                }
                return forgot
            }
            count("forgotten")
        }
        logger.info(
            result.line,
            ["channels.spared": String(result.spared), "apns.environment": env])
        return result
    }

    /// Claims the fleet's reconciliation of `environment` unless another process holds it or finished one
    /// less than `interval` ago (a lease row in `channel_reconciliations`).
    func claimReconciliation(_ environment: PushEnvironment, interval: Double) async throws -> Bool {
        let now = clock.now()
        let env = environment.rawValue
        let holdUntil = now + 300
        return try await pool.withConnection { c in
            try c.query(
                """
                INSERT INTO channel_reconciliations AS r (environment, held_until) VALUES (\(env), \(holdUntil))
                ON CONFLICT (environment) DO UPDATE SET held_until = \(holdUntil)
                WHERE r.held_until < \(now) AND (r.finished_at IS NULL OR r.finished_at <= \(now - interval))
                RETURNING 1
                """
            ).count == 1
        }
    }

    func finishReconciliation(_ environment: PushEnvironment) async throws {
        let now = clock.now()
        let env = environment.rawValue
        _ = try await pool.withConnection { c in
            try c.query(
                "UPDATE channel_reconciliations SET held_until = 0, finished_at = \(now) WHERE environment = \(env)")
        }
    }
}

/// Every worker's periodic channel pass (contract §7): deletes the channels due every
/// `channelDeleteIntervalSeconds`, and reconciles each environment every `channelReconcileIntervalSeconds`
/// (one process at a time across the fleet: `channel_reconciliations`). Runs as a Service in the worker's
/// ServiceGroup beside the outbox worker. A failed pass is logged and tried again at the next interval.
public final class ChannelMaintenance: Service {
    public let name = "channel-maintenance"
    private let lifecycle: ChannelLifecycle
    private let clock: any WallClock
    private let logger = Logger(label: "channels")

    public init(lifecycle: ChannelLifecycle, clock: any WallClock = SystemClock()) {
        self.lifecycle = lifecycle
        self.clock = clock
    }

    public func run() async throws {
        let configuration = lifecycle.configuration
        // The first pass one interval after start, not at once: a fleet restarting together does not list
        // APNs' channels all at the same moment, and a short-lived worker (a test's) sends APNs nothing of its own.
        var lastReconcile = clock.now()
        while !Task.isCancelled {
            do {
                try await lifecycle.deleteDue()
            } catch is CancellationError {
                return
            } catch {
                logger.warning("channel deletion pass failed; trying again later", ["error": "\(error)"])
            }
            let now = clock.now()
            if now - lastReconcile >= configuration.channelReconcileIntervalSeconds {
                lastReconcile = now
                for environment in PushEnvironment.allCases {
                    do {
                        guard
                            try await lifecycle.claimReconciliation(
                                environment, interval: configuration.channelReconcileIntervalSeconds * 0.9)
                        else { continue }
                        do {
                            _ = try await lifecycle.reconcile(environment)
                        } catch {
                            logger.warning(
                                "channel reconciliation failed; trying again later",
                                ["apns.environment": environment.rawValue, "error": "\(error)"])
                        }
                        try await lifecycle.finishReconciliation(environment)
                    } catch {
                        logger.warning("channel reconciliation failed; trying again later", ["error": "\(error)"])
                    }
                }
            }
            do { try await clock.sleep(seconds: configuration.channelDeleteIntervalSeconds) } catch { return }
        }
    }
}

extension Result where Success == Void, Failure == ChannelFailure {
    /// nil when the channel is gone at APNs (deleted now, or it was not there any more); else the failure.
    var gone: ChannelFailure? {
        switch self {
        case .success: nil
        case .failure(let failure): failure.kind == .notRegistered ? nil : failure
        }
    }
}
