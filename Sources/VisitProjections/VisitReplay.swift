import EventStore
import Foundation
import Postgres
import Runtime
import VisitDomain

/// Rebuilds the visit read model from the event log while the API keeps serving and appending.
///
/// 1. Create a shadow table shaped like `visits`.
/// 2. In one REPEATABLE READ snapshot, read every visit event in (stream_name, position) order through a
///    cursor, fold each stream with the rules in force, write the states into the shadow in batches.
/// 3. Swap: lock `visits` against writers for a moment, carry over every live row that is newer than the
///    snapshot (appends that happened during the rebuild, projected by the same pure function), rename.
/// It writes only the read model: no push is ever enqueued by a replay.
public struct VisitReplay: Sendable {
    public struct Progress: Sendable {
        public let events: Int
        public let visits: Int
        public let eventsPerSecond: Double
    }

    public struct Report: Sendable {
        public let events: Int
        public let visits: Int
        public let carriedOver: Int
        public let seconds: Double
        /// Where the time went: reading the log, folding, writing the shadow table.
        public var readSeconds = 0.0, foldSeconds = 0.0, encodeSeconds = 0.0, writeSeconds = 0.0
        public var eventsPerSecond: Double { seconds > 0 ? Double(events) / seconds : 0 }
    }

    public let pool: PostgresPool
    public let readModel: VisitReadModel
    public var fetchSize = 20_000
    public var writeBatch = 2_000
    static let shadow = "visits_rebuild"

    public init(pool: PostgresPool, readModel: VisitReadModel) {
        self.pool = pool
        self.readModel = readModel
    }

    /// Runs the rebuild; `progress` is called about once a second.
    public func run(progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> Report {
        let started = Date()
        // The shadow starts with its primary key only (the upsert needs it); the other indexes of `visits`
        // are built once at the end, which is far cheaper than maintaining them row by row.
        let secondaryIndexes = try await pool.withConnection { c -> [(name: String, definition: String)] in
            try c.execute(
                script: """
                    DROP TABLE IF EXISTS \(VisitReplay.shadow);
                    CREATE TABLE \(VisitReplay.shadow) (LIKE visits INCLUDING DEFAULTS);
                    ALTER TABLE \(VisitReplay.shadow) ADD CONSTRAINT \(VisitReplay.shadow)_pkey PRIMARY KEY (visit_id);
                    """)
            return try c.query(
                """
                SELECT indexname, indexdef FROM pg_indexes
                WHERE schemaname = current_schema() AND tablename = 'visits' AND indexname <> 'visits_pkey'
                """
            ).rows.map { (try $0.string("indexname"), try $0.string("indexdef")) }
        }
        let readModel = self.readModel
        let fetchSize = self.fetchSize
        let writeBatch = self.writeBatch
        let pool = self.pool
        // Reading + folding run on the pooled connection's thread; encoding + writing the shadow run on a
        // writer of their own, so PostgreSQL and both cores work at once.
        let counts = try await pool.withConnection { reader -> (Int, Int, Double, Double, ShadowWriter.Timing) in
            let writer = try ShadowWriter(url: pool.configuration.url, readModel: readModel, table: VisitReplay.shadow)
            try reader.execute(script: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try reader.execute(
                script: """
                    DECLARE visit_log NO SCROLL CURSOR FOR
                    SELECT stream_name, position, type, data::text AS data, extract(epoch FROM recorded_at)::float8 AS recorded_at
                    FROM events WHERE stream_name LIKE 'visit-%' ORDER BY stream_name, position
                    """)
            var events = 0
            var visits = 0
            var pending: [VisitState] = []
            pending.reserveCapacity(writeBatch)
            var current: (stream: String, state: VisitState?)? = nil
            var lastReport = Date()
            var readSeconds = 0.0
            var foldSeconds = 0.0
            while true {
                let t0 = Date()
                let rows = try reader.query(PostgresQuery(sql: "FETCH \(fetchSize) FROM visit_log"))
                readSeconds += Date().timeIntervalSince(t0)
                if rows.isEmpty { break }
                let t1 = Date()
                for row in rows.rows {
                    let stream = row.values[0]!
                    if current?.stream != stream {
                        if let state = current?.state {
                            pending.append(state)
                            visits += 1
                            if pending.count >= writeBatch {
                                try writer.submit(pending)
                                pending.removeAll(keepingCapacity: true)
                            }
                        }
                        current = (stream, nil)
                    }
                    let stored = StoredVisitEvent(
                        eventType: row.values[2]!, data: Array(row.values[3]!.utf8),
                        version: Int(row.values[1]!) ?? 0, recordedAt: Int((Double(row.values[4]!) ?? 0).rounded(.down)))
                    current!.state = try VisitDecider.evolve(current!.state, try stored.decoded())
                    events += 1
                }
                foldSeconds += Date().timeIntervalSince(t1)
                if Date().timeIntervalSince(lastReport) >= 1 {
                    lastReport = Date()
                    let elapsed = Date().timeIntervalSince(started)
                    progress(Progress(events: events, visits: visits, eventsPerSecond: Double(events) / max(elapsed, 0.001)))
                }
            }
            if let state = current?.state {
                pending.append(state)
                visits += 1
            }
            try writer.submit(pending)
            let timing = try writer.finish()
            try reader.execute(script: "COMMIT")
            return (events, visits, readSeconds, foldSeconds, timing)
        }
        try await pool.withConnection { c in
            for index in secondaryIndexes {
                let definition = index.definition
                    .replacingOccurrences(of: "INDEX \(index.name) ON", with: "INDEX \(index.name)_rebuild ON")
                    .replacingOccurrences(of: " visits USING", with: " \(VisitReplay.shadow) USING")
                    .replacingOccurrences(of: ".visits USING", with: ".\(VisitReplay.shadow) USING")
                try c.execute(script: definition)
            }
            try c.execute(script: "ANALYZE \(VisitReplay.shadow)")
        }
        let carried = try await pool.withTransaction { c -> Int in
            try c.execute(script: "LOCK TABLE visits IN EXCLUSIVE MODE")
            let moved = try c.query(
                PostgresQuery(
                    sql: """
                        INSERT INTO \(VisitReplay.shadow) AS s SELECT * FROM visits
                        ON CONFLICT (visit_id) DO UPDATE SET customer_id = excluded.customer_id, technician_id = excluded.technician_id,
                            status = excluded.status, ended = excluded.ended, version = excluded.version,
                            scheduled_at = excluded.scheduled_at, view = excluded.view, state = excluded.state, updated_at = excluded.updated_at
                        WHERE s.version < excluded.version
                        """)
            ).affectedRows
            try c.execute(
                script: """
                    ALTER TABLE visits RENAME TO visits_replaced;
                    ALTER TABLE \(VisitReplay.shadow) RENAME TO visits;
                    DROP TABLE visits_replaced;
                    ALTER INDEX \(VisitReplay.shadow)_pkey RENAME TO visits_pkey;
                    """)
            for index in secondaryIndexes {
                try c.execute(script: "ALTER INDEX \(index.name)_rebuild RENAME TO \(index.name)")
            }
            return moved
        }
        let seconds = Date().timeIntervalSince(started)
        var report = Report(events: counts.0, visits: counts.1, carriedOver: carried, seconds: seconds)
        report.readSeconds = counts.2
        report.foldSeconds = counts.3
        report.encodeSeconds = counts.4.encode
        report.writeSeconds = counts.4.write
        return report
    }
}

/// Encodes and writes batches of states into the shadow table on a thread of its own, at most a few
/// batches behind the reader (back-pressure), remembering the first error.
final class ShadowWriter: @unchecked Sendable {
    // `connection`, `timing` and `failure` are only touched on `queue` (serial) or after `finish` drained it.
    struct Timing: Sendable {
        var encode = 0.0
        var write = 0.0
    }
    private let queue = DispatchQueue(label: "livevisits.replay.writer")
    private let slots = DispatchSemaphore(value: 3)
    private let connection: PostgresConnection
    private let readModel: VisitReadModel
    private let table: String
    private var timing = Timing()
    private var failure: (any Error)?

    init(url: String, readModel: VisitReadModel, table: String) throws {
        connection = try PostgresConnection(url: url)
        self.readModel = readModel
        self.table = table
    }

    func submit(_ states: [VisitState]) throws {
        guard !states.isEmpty else { return }
        slots.wait()
        queue.async { [self] in
            defer { slots.signal() }
            guard failure == nil else { return }
            do {
                let t0 = Date()
                let batch = readModel.encode(states)
                let t1 = Date()
                try readModel.write(batch, into: table, on: connection)
                timing.encode += t1.timeIntervalSince(t0)
                timing.write += Date().timeIntervalSince(t1)
            } catch {
                failure = error
            }
        }
    }

    /// Waits for every submitted batch; rethrows the first failure.
    func finish() throws -> Timing {
        queue.sync {}
        if let failure { throw failure }
        return timing
    }
}
