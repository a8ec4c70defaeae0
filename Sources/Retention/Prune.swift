import Foundation
import Postgres
import Runtime

/// Applies the retention rules once (`livevisits prune`, and each worker's hourly `PrunePass`): each rule's
/// batch statement runs by itself — its own transaction, at most `batchSize` rows, no lock held between
/// batches — until a batch deletes nothing. One pass at a time across the fleet: the pass holds a session
/// advisory lock on its connection; a pass that finds it taken does nothing.
public struct Prune: Sendable {
    /// The advisory lock key of the pass (`pg_try_advisory_lock`).
    public static let lockKey: Int64 = 0x6C76_7072_756E_6531  // "lvprune1"

    public let pool: PostgresPool
    public let settings: RetentionSettings
    public let rules: [RetentionRule]
    public let clock: any WallClock
    public let metrics: Metrics

    public init(
        pool: PostgresPool, settings: RetentionSettings = RetentionSettings(), rules: [RetentionRule] = RetentionRule.all,
        clock: any WallClock = SystemClock(), metrics: Metrics = .shared
    ) {
        self.pool = pool
        self.settings = settings
        self.rules = rules
        self.clock = clock
        self.metrics = metrics
    }

    /// What one pass removed: rows per table, in the order the tables were first named.
    public struct Report: Sendable {
        public var removed: [(table: String, rows: Int)] = []
        /// False when another pass held the lock (nothing was done).
        public var ran = true
        public var batches = 0
        public var seconds = 0.0

        mutating func add(_ table: String, _ rows: Int) {
            if let i = removed.firstIndex(where: { $0.table == table }) {
                removed[i].rows += rows
            } else {
                removed.append((table, rows))
            }
        }

        /// `prune: <table> <n>` lines.
        public var lines: [String] { removed.map { "prune: \($0.table) \($0.rows)" } }
    }

    /// One pass. `batchDone` is called after each batch (tests and the benchmark watch progress).
    public func run(batchDone: @escaping @Sendable (String, Int) -> Void = { _, _ in }) async throws -> Report {
        let rules = self.rules
        let settings = self.settings
        let now = clock.now()
        let metrics = self.metrics
        let started = Date()
        var report = try await pool.withConnection { c -> Report in
            var report = Report()
            guard try c.query("SELECT pg_try_advisory_lock(\(Prune.lockKey)) AS locked").first?["locked"] == "t" else {
                report.ran = false
                return report
            }
            defer { _ = try? c.query("SELECT pg_advisory_unlock(\(Prune.lockKey))") }
            for rule in rules {
                for column in try Prune.columns(of: rule, settings: settings, now: now, on: c) { report.add(column, 0) }
                while !Task.isCancelled {
                    let rows = try c.query(rule.batch(settings, now))
                    report.batches += 1
                    guard let row = rows.first else { break }
                    var total = 0
                    for (i, table) in rows.columns.enumerated() {
                        let n = Int(row[i] ?? "0") ?? 0
                        total += n
                        report.add(table, n)
                        if n > 0 {
                            metrics.increment(
                                "livevisits_pruned_rows_total", help: "Rows deleted by the retention rules, by table.",
                                labels: ["table": table], by: Double(n))
                        }
                    }
                    batchDone(rule.name, total)
                    if total == 0 { break }
                }
            }
            return report
        }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// The tables a rule reports (its answer's columns), from a statement that deletes nothing.
    static func columns(of rule: RetentionRule, settings: RetentionSettings, now: Double, on c: PostgresConnection) throws
        -> [String]
    {
        var none = settings
        none.batchSize = 0
        return try c.query(rule.batch(none, now)).columns
    }
}

/// Every worker's hourly retention pass (contract §10), a service of the worker's group: it waits its
/// interval, runs `Prune` (which skips the pass while another process's pass holds the lock), logs what it
/// removed, and stops between batches when the group shuts down.
public struct PrunePass: Service {
    public let name = "prune"
    public let prune: Prune
    public let intervalSeconds: Double
    let logger = Logger(label: "prune")

    public init(prune: Prune, intervalSeconds: Double = 3_600) {
        self.prune = prune
        self.intervalSeconds = intervalSeconds
    }

    public func run() async throws {
        while !Task.isCancelled {
            do {
                try await prune.clock.sleep(seconds: intervalSeconds)
            } catch {
                return
            }
            do {
                let report = try await prune.run()
                guard report.ran else { continue }
                var metadata: [String: String] = ["prune.seconds": String(format: "%.1f", report.seconds)]
                for (table, rows) in report.removed { metadata["prune.\(table)"] = String(rows) }
                logger.info("retention pass", metadata)
            } catch is CancellationError {
                return
            } catch {
                logger.error("retention pass failed; next one in an hour", ["error": String(describing: error)])
            }
        }
    }
}
