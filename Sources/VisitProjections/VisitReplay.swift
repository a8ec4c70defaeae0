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
        try await pool.withConnection { c in
            try c.execute(script: """
                DROP TABLE IF EXISTS \(VisitReplay.shadow);
                CREATE TABLE \(VisitReplay.shadow) (LIKE visits INCLUDING ALL);
                """)
        }
        let readModel = self.readModel
        let fetchSize = self.fetchSize
        let writeBatch = self.writeBatch
        let pool = self.pool
        // The writer connection is held for the whole scan; the reader runs on another one.
        let counts = try await pool.withConnection { reader -> (Int, Int) in
            try reader.execute(script: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try reader.execute(script: """
                DECLARE visit_log NO SCROLL CURSOR FOR
                SELECT stream_name, position, type, data::text AS data, extract(epoch FROM recorded_at)::float8 AS recorded_at
                FROM events WHERE stream_name LIKE 'visit-%' ORDER BY stream_name, position
                """)
            var events = 0
            var visits = 0
            var pending: [VisitState] = []
            var current: (stream: String, state: VisitState?)? = nil
            var lastReport = Date()
            let writer = try PostgresConnection(url: pool.configuration.url)
            func flush() throws {
                try readModel.upsert(pending, into: VisitReplay.shadow, on: writer)
                pending.removeAll(keepingCapacity: true)
            }
            while true {
                let rows = try reader.query(PostgresQuery(sql: "FETCH \(fetchSize) FROM visit_log"))
                if rows.isEmpty { break }
                for row in rows.rows {
                    let stream = row.values[0]!
                    if current?.stream != stream {
                        if let state = current?.state {
                            pending.append(state)
                            visits += 1
                            if pending.count >= writeBatch { try flush() }
                        }
                        current = (stream, nil)
                    }
                    let stored = StoredVisitEvent(
                        eventType: row.values[2]!, data: Array(row.values[3]!.utf8),
                        version: Int(row.values[1]!) ?? 0, recordedAt: Int((Double(row.values[4]!) ?? 0).rounded(.down)))
                    current!.state = try VisitDecider.evolve(current!.state, try stored.decoded())
                    events += 1
                }
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
            try flush()
            try reader.execute(script: "COMMIT")
            return (events, visits)
        }
        let carried = try await pool.withTransaction { c -> Int in
            try c.execute(script: "LOCK TABLE visits IN EXCLUSIVE MODE")
            let moved = try c.query(PostgresQuery(sql: """
                INSERT INTO \(VisitReplay.shadow) AS s SELECT * FROM visits
                ON CONFLICT (visit_id) DO UPDATE SET customer_id = excluded.customer_id, technician_id = excluded.technician_id,
                    status = excluded.status, ended = excluded.ended, version = excluded.version,
                    scheduled_at = excluded.scheduled_at, view = excluded.view, state = excluded.state, updated_at = excluded.updated_at
                WHERE s.version < excluded.version
                """)).affectedRows
            try c.execute(script: """
                ALTER TABLE visits RENAME TO visits_replaced;
                ALTER TABLE \(VisitReplay.shadow) RENAME TO visits;
                DROP TABLE visits_replaced;
                """)
            return moved
        }
        let seconds = Date().timeIntervalSince(started)
        return Report(events: counts.0, visits: counts.1, carriedOver: carried, seconds: seconds)
    }
}
