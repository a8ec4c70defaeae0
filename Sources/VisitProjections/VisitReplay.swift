import EventStore
import Foundation
import Postgres
import Runtime
import VisitDomain

/// Rebuilds a read model of the visits (`Projection`: `visits`, `technicians`) from the event log while the
/// API keeps serving and appending.
///
/// 1. Create a shadow table shaped like the projection's table.
/// 2. In one REPEATABLE READ snapshot, read every visit event in (stream_name, position) order with COPY,
///    fold each stream with the rules in force, encode the states and COPY them into the shadow — four
///    stages on threads of their own with bounded queues between them (`Stages`), so PostgreSQL's reading,
///    our folding and encoding, and PostgreSQL's writing all run at once.
/// 3. Swap: lock the table against writers for a moment, carry over every live row that is newer than the
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
        /// Busy seconds of each stage (they overlap: their sum exceeds the wall time).
        public var readSeconds = 0.0, foldSeconds = 0.0, encodeSeconds = 0.0, writeSeconds = 0.0
        /// Wall seconds of the stages together, then of the index builds and the swap after them.
        public var stagesSeconds = 0.0, indexSeconds = 0.0, swapSeconds = 0.0
        public var eventsPerSecond: Double { seconds > 0 ? Double(events) / seconds : 0 }
    }

    public let pool: PostgresPool
    public let readModel: VisitReadModel
    /// The read model rebuilt.
    public let projection: Projection
    /// Bytes of COPY text the reader hands to the fold stage at a time.
    public var chunkBytes = 256 * 1024
    /// States the fold stage hands to the encoder at a time.
    public var writeBatch = 2_000
    /// The table the rebuild fills before the swap.
    var shadow: String { projection.table + "_rebuild" }

    public init(pool: PostgresPool, readModel: VisitReadModel, projection: Projection = .visits) {
        self.pool = pool
        self.readModel = readModel
        self.projection = projection
    }

    /// Runs the rebuild; `progress` is called about once a second.
    public func run(progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> Report {
        let started = Date()
        let (table, shadow) = (projection.table, shadow)
        // The shadow starts with its primary key only (the upsert needs it); the table's other indexes
        // are built once at the end, which is far cheaper than maintaining them row by row.
        let secondaryIndexes = try await pool.withConnection { c -> [(name: String, definition: String)] in
            try c.execute(
                script: """
                    DROP TABLE IF EXISTS \(shadow);
                    CREATE TABLE \(shadow) (LIKE \(table) INCLUDING DEFAULTS);
                    ALTER TABLE \(shadow) ADD CONSTRAINT \(shadow)_pkey PRIMARY KEY (visit_id);
                    """)
            return try c.query(
                """
                SELECT indexname, indexdef FROM pg_indexes
                WHERE schemaname = current_schema() AND tablename = \(table) AND indexname <> \(table + "_pkey")
                """
            ).rows.map { (try $0.string("indexname"), try $0.string("indexdef")) }
        }
        let stages = Stages(
            readModel: readModel, projection: projection, shadow: shadow, url: pool.configuration.url,
            chunkBytes: chunkBytes, writeBatch: writeBatch, started: started, progress: progress)
        // The reader is the pooled connection's own thread; fold, encode and write run on threads of theirs.
        let counts = try await pool.withConnection { reader in try stages.run(reader: reader) }
        let stagesDone = Date()
        try await pool.withConnection { c in
            for statement in projection.afterCopy(shadow) { try c.execute(script: statement) }
            for index in secondaryIndexes {
                let definition = index.definition
                    .replacingOccurrences(of: "INDEX \(index.name) ON", with: "INDEX \(index.name)_rebuild ON")
                    .replacingOccurrences(of: " \(table) USING", with: " \(shadow) USING")
                    .replacingOccurrences(of: ".\(table) USING", with: ".\(shadow) USING")
                try c.execute(script: definition)
            }
            try c.execute(script: "ANALYZE \(shadow)")
        }
        let indexesDone = Date()
        let carried = try await pool.withTransaction { c -> Int in
            try c.execute(script: "LOCK TABLE \(table) IN EXCLUSIVE MODE")
            let carried = projection.carriedColumns.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
            let moved = try c.query(
                PostgresQuery(
                    sql: """
                        INSERT INTO \(shadow) AS s SELECT * FROM \(table)
                        ON CONFLICT (visit_id) DO UPDATE SET \(carried)
                        WHERE s.version < excluded.version
                        """)
            ).affectedRows
            try c.execute(
                script: """
                    ALTER TABLE \(table) RENAME TO \(table)_replaced;
                    ALTER TABLE \(shadow) RENAME TO \(table);
                    DROP TABLE \(table)_replaced;
                    ALTER INDEX \(shadow)_pkey RENAME TO \(table)_pkey;
                    """)
            for index in secondaryIndexes {
                try c.execute(script: "ALTER INDEX \(index.name)_rebuild RENAME TO \(index.name)")
            }
            return moved
        }
        let seconds = Date().timeIntervalSince(started)
        var report = Report(events: counts.events, visits: counts.visits, carriedOver: carried, seconds: seconds)
        report.readSeconds = counts.read
        report.foldSeconds = counts.fold
        report.encodeSeconds = counts.encode
        report.writeSeconds = counts.write
        report.stagesSeconds = stagesDone.timeIntervalSince(started)
        report.indexSeconds = indexesDone.timeIntervalSince(stagesDone)
        report.swapSeconds = Date().timeIntervalSince(indexesDone)
        return report
    }
}

extension VisitReplay {
    /// The four stages of a rebuild and what they hand on:
    ///
    ///     read (COPY TO, the pooled connection)  --chunks of COPY text-->
    ///     fold (decode each event, evolve its stream's state)  --batches of states-->
    ///     encode (view text, snapshot, COPY text)  --chunks of COPY text-->
    ///     write (COPY FROM into the shadow, a connection of its own)
    ///
    /// Each queue holds a few items, so a stage that is ahead waits for the next rather than filling memory,
    /// and the first failure cancels every queue (each stage then stops). The fold stage is the one place an
    /// event's stored form becomes a domain event (`fold(_:into:)`): a step that must see every stored event
    /// before it is decoded belongs there.
    final class Stages: Sendable {
        struct Counts: Sendable {
            var events = 0
            var visits = 0
            /// Busy seconds of each stage (its time less its waits on the queues).
            var read = 0.0, fold = 0.0, encode = 0.0, write = 0.0
        }

        let readModel: VisitReadModel
        let projection: Projection
        let shadow: String
        let url: String
        let chunkBytes: Int
        let writeBatch: Int
        let started: Date
        let progress: @Sendable (Progress) -> Void
        let failure = ReplayStages.Failure()
        let chunks = StageQueue<[UInt8]>(capacity: 4)
        let states = StageQueue<[Folded]>(capacity: 4)
        let rows = StageQueue<[UInt8]>(capacity: 4)
        private let counts = Lock(Counts())

        /// The log in fold order, as COPY text: stream, position, type, data, recorded time (epoch seconds),
        /// global position.
        static let logCopy = """
            COPY (SELECT stream_name, position, type, data, extract(epoch FROM recorded_at)::float8, global_position
                  FROM events WHERE stream_name LIKE 'visit-%' ORDER BY stream_name, position) TO STDOUT
            """

        init(
            readModel: VisitReadModel, projection: Projection, shadow: String, url: String, chunkBytes: Int, writeBatch: Int,
            started: Date, progress: @escaping @Sendable (Progress) -> Void
        ) {
            self.readModel = readModel
            self.projection = projection
            self.shadow = shadow
            self.url = url
            self.chunkBytes = max(4096, chunkBytes)
            self.writeBatch = max(1, writeBatch)
            self.started = started
            self.progress = progress
        }

        private func cancelAll() {
            chunks.cancel()
            states.cancel()
            rows.cancel()
        }

        /// Runs the rebuild on `reader` (the calling thread reads), the other stages on threads of their own;
        /// returns when all have finished, rethrowing the first failure.
        func run(reader: PostgresConnection) throws -> Counts {
            let group = DispatchGroup()
            let cancel: @Sendable () -> Void = { [self] in cancelAll() }
            ReplayStages.start("livevisits.replay.fold", in: group, failure: failure, onError: cancel) { [self] in
                try foldStage()
            }
            ReplayStages.start("livevisits.replay.encode", in: group, failure: failure, onError: cancel) { [self] in
                try encodeStage()
            }
            ReplayStages.start("livevisits.replay.write", in: group, failure: failure, onError: cancel) { [self] in
                try writeStage()
            }
            do {
                try readStage(reader)
            } catch is ReplayStages.Cancelled {
            } catch {
                failure.record(error)
                cancelAll()
            }
            group.wait()
            if reader.inTransaction { try? reader.execute(script: failure.error == nil ? "COMMIT" : "ROLLBACK") }
            if let error = failure.error { throw error }
            return counts.withLock { $0 }
        }

        /// Reads the log in one REPEATABLE READ snapshot (the snapshot the swap compares live rows with).
        private func readStage(_ reader: PostgresConnection) throws {
            let t0 = Date()
            try reader.execute(script: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            var chunk: [UInt8] = []
            chunk.reserveCapacity(chunkBytes + 8192)
            try reader.copyOut(Stages.logCopy) { row in
                chunk.append(contentsOf: row)
                if chunk.count >= chunkBytes {
                    try chunks.put(chunk)
                    chunk = []
                    chunk.reserveCapacity(chunkBytes + 8192)
                }
            }
            if !chunk.isEmpty { try chunks.put(chunk) }
            chunks.close()
            let busy = Date().timeIntervalSince(t0) - chunks.waits.put
            counts.withLock { $0.read = busy }
        }

        /// Folds each stream's events into its state, handing on states in batches of `writeBatch`, each with
        /// its booking order (the global position of its stream's first event, as the upsert reads it).
        private func foldStage() throws {
            var stream: [UInt8] = []
            var state: VisitState?
            var booked: Int64 = 0
            var batch: [Folded] = []
            batch.reserveCapacity(writeBatch)
            var events = 0
            var visits = 0
            var busy = 0.0
            var lastReport = Date()
            while let chunk = try chunks.take() {
                let t0 = Date()
                try chunk.withUnsafeBytes { bytes in
                    var start = 0
                    while start < bytes.count {
                        var end = start
                        while bytes[end] != 0x0A { end += 1 }
                        let fields = PostgresCopyText.fields(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                        start = end + 1
                        guard fields.count == 6 else {
                            throw PostgresError(code: .protocolViolation, message: "a log row has \(fields.count) fields, not 6")
                        }
                        if !fields[0].elementsEqual(stream) {
                            if let finished = state {
                                batch.append(Folded(state: finished, booked: booked))
                                visits += 1
                                if batch.count >= writeBatch {
                                    try states.put(batch)
                                    batch.removeAll(keepingCapacity: true)
                                }
                            }
                            stream = Array(fields[0])
                            state = nil
                            booked =
                                fields[1].elementsEqual("1".utf8)
                                ? Int64(String(decoding: fields[5], as: UTF8.self)) ?? 0 : 0
                        }
                        state = try Stages.fold(fields, into: state)
                        events += 1
                    }
                }
                busy += Date().timeIntervalSince(t0)
                if Date().timeIntervalSince(lastReport) >= 1 {
                    lastReport = Date()
                    let elapsed = lastReport.timeIntervalSince(started)
                    progress(Progress(events: events, visits: visits, eventsPerSecond: Double(events) / max(elapsed, 0.001)))
                }
            }
            if let finished = state {
                batch.append(Folded(state: finished, booked: booked))
                visits += 1
            }
            if !batch.isEmpty { try states.put(batch) }
            states.close()
            let folded = (events, visits, busy - states.waits.put)
            counts.withLock {
                $0.events = folded.0
                $0.visits = folded.1
                $0.fold = folded.2
            }
        }

        /// One log row (`logCopy`'s fields) folded into its stream's state.
        static func fold(_ fields: [UnsafeRawBufferPointer], into state: VisitState?) throws -> VisitState {
            guard let type = PostgresCopyText.unescaped(fields[2]), let data = PostgresCopyText.unescaped(fields[3]),
                let version = Int(String(decoding: fields[1], as: UTF8.self)),
                let recordedAt = Double(String(decoding: fields[4], as: UTF8.self))
            else {
                throw PostgresError(code: .protocolViolation, message: "a log row has a NULL or malformed field")
            }
            let stored = StoredVisitEvent(
                eventType: String(decoding: type, as: UTF8.self), data: data, version: version,
                recordedAt: Int(recordedAt.rounded(.down)))
            return try VisitDecider.evolve(state, try stored.decoded())
        }

        /// Encodes batches of states as COPY text rows.
        private func encodeStage() throws {
            var busy = 0.0
            while let batch = try states.take() {
                let t0 = Date()
                var buffer: [UInt8] = []
                buffer.reserveCapacity(batch.count * 1024)
                projection.appendCopyRows(readModel, batch, &buffer)
                busy += Date().timeIntervalSince(t0)
                try rows.put(buffer)
            }
            rows.close()
            let encoded = busy
            counts.withLock { $0.encode = encoded }
        }

        /// COPYs the rows into the shadow table on a connection of its own, in one statement: it stands
        /// only if every row arrived (a failure upstream aborts it).
        private func writeStage() throws {
            let connection = try PostgresConnection(url: url)
            let t0 = Date()
            try connection.copyIn("COPY \(shadow) (\(projection.copyColumns)) FROM STDIN") { send in
                while let buffer = try rows.take() {
                    try buffer.withUnsafeBytes { try send($0) }
                }
            }
            let busy = Date().timeIntervalSince(t0) - rows.waits.take
            counts.withLock { $0.write = busy }
        }
    }
}
