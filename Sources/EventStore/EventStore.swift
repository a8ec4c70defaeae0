import Foundation
import Postgres
import Runtime

/// The PostgreSQL event store: optimistic appends, stream and log reads, checkpoints.
///
/// Every operation exists twice: as an `async` method that borrows a pooled connection, and as a static
/// method on a `PostgresConnection` so that callers can append inside a larger transaction (the visit
/// command writes its event, read model and push intents atomically). The store has no batching and no
/// idempotency of its own: the product's writes are grouped by `VisitCommandBatcher` (one pipeline per
/// batch, `appendStatement(forEach:)`), and a retried request is recognised by the HTTP layer's
/// idempotency records, which keep the first answer.
public final class EventStore: Sendable {
    public let pool: PostgresPool
    public let limits: EventStoreLimits
    /// Where `livevisits_events_appended_total` is counted.
    public let metrics: Metrics

    /// The channel `eventsCommitted` notifies after a commit.
    public static let channel = "livevisits_events"

    /// - Parameter metrics: the registry that counts appended events.
    public init(pool: PostgresPool, limits: EventStoreLimits = EventStoreLimits(), metrics: Metrics = .shared) {
        self.pool = pool
        self.limits = limits
        self.metrics = metrics
    }

    // MARK: append

    /// Appends events to one stream in one autocommitted statement. Throws `wrongExpectedVersion` on a
    /// conflict.
    @discardableResult
    public func append(_ request: AppendRequest) async throws -> AppendResult {
        try EventStore.validate(request, limits: limits)
        let limits = self.limits
        let result: AppendResult
        do {
            result = try await pool.withConnection { try EventStore.append(request, on: $0, limits: limits) }
        } catch {
            throw EventStoreError.wrap(error)
        }
        eventsCommitted(count: result.globalPositions.count)
        return result
    }

    /// Counts committed events and notifies `channel` (once per burst, outside the writing transaction).
    /// Call after committing a transaction that used the static `append(_:on:limits:)` or `appendStatement`.
    public func eventsCommitted(count: Int) {
        metrics.increment(
            "livevisits_events_appended_total", help: "Events appended to the event store.", by: Double(count))
        pool.notifyAfterCommit(EventStore.channel)
    }

    /// Appends with one statement (`appendStatement`). Outside a transaction the statement commits by
    /// itself — one round trip; inside one (the caller's), it is part of it and the caller commits.
    @discardableResult
    public static func append(
        _ request: AppendRequest, on connection: PostgresConnection, limits: EventStoreLimits = EventStoreLimits()
    ) throws -> AppendResult {
        try validate(request, limits: limits)
        let rows: PostgresRows
        do {
            rows = try connection.query(appendStatement(request))
        } catch let error as PostgresError {
            throw try appendFailure(error, request, on: connection)
        }
        return try appendResult(request, rows, on: connection)
    }

    /// One statement that appends `request` if, and only if, the stream is at the expected version: it
    /// inserts the events (at positions after the expected version, or after the stream's last one for
    /// `.any`) and answers one row per event inserted (`stream_name`, `global_position`, `position`,
    /// `recorded_at`) — no row when the stream is behind the expected version. A stream ahead of it, or a
    /// concurrent writer, makes the insert hit the unique index: see `appendFailure`.
    ///
    /// `guarded: false` leaves out the check that makes it insert nothing, for a caller that read the
    /// stream's version itself and pipelines more statements after this one in the same transaction (which
    /// must not commit without the event): a version that moved on meanwhile then fails on the unique index
    /// and aborts the transaction instead.
    public static func appendStatement(_ request: AppendRequest, guarded: Bool = true) -> PostgresQuery {
        let expected: Int64?
        switch request.expectedVersion {
        case .any: expected = nil
        case .noStream: expected = 0
        case .exactly(let v): expected = v
        }
        let stream = request.streamName
        let checkVersion: Int64? = guarded ? expected : nil
        if request.events.count == 1, let event = request.events.first {
            // One event (nearly every append): the insert alone, without the arrays, their numbering and the sorts
            // that order several; the version check is the same as the general statement's.
            return """
                INSERT INTO events (stream_name, position, type, data, metadata, recorded_at)
                SELECT \(stream), b.version + 1, \(event.type), \(event.data)::jsonb, \(event.metadata.jsonText)::jsonb,
                       COALESCE(to_timestamp(\(request.recordedAt)::double precision), now())
                FROM (SELECT COALESCE(\(expected)::bigint,
                                      (SELECT COALESCE(max(position), 0) FROM events WHERE stream_name = \(stream))) AS version
                      WHERE \(checkVersion)::bigint IS NULL OR \(checkVersion)::bigint = 0
                            OR EXISTS (SELECT 1 FROM events WHERE stream_name = \(stream) AND position = \(checkVersion))) b
                RETURNING stream_name, global_position, position, extract(epoch FROM recorded_at)::float8 AS recorded_at
                """
        }
        let types = request.events.map(\.type)
        let datas = request.events.map(\.data)
        let metadatas = request.events.map(\.metadata.jsonText)
        return """
            WITH base AS (
                SELECT COALESCE(\(expected)::bigint,
                                (SELECT COALESCE(max(position), 0) FROM events WHERE stream_name = \(stream))) AS version
                WHERE \(checkVersion)::bigint IS NULL OR \(checkVersion)::bigint = 0
                      OR EXISTS (SELECT 1 FROM events WHERE stream_name = \(stream) AND position = \(checkVersion))
            ),
            ins AS (
                INSERT INTO events (stream_name, position, type, data, metadata, recorded_at)
                SELECT \(stream), b.version + x.ord, x.t, x.d::jsonb, x.m::jsonb,
                       COALESCE(to_timestamp(\(request.recordedAt)::double precision), now())
                FROM base b, unnest(\(types)::text[], \(datas)::text[], \(metadatas)::text[]) WITH ORDINALITY AS x(t, d, m, ord)
                ORDER BY x.ord
                RETURNING global_position, position, recorded_at
            )
            SELECT \(stream)::text AS stream_name, global_position, position,
                   extract(epoch FROM recorded_at)::float8 AS recorded_at
            FROM ins ORDER BY position
            """
    }

    /// One statement appending each request's events right after its expected version — `.exactly` or
    /// `.noStream` only (a caller that read the versions, like the visit commands' group commit); requests on
    /// one stream follow each other (each expecting the version the one before it leaves). Unguarded like `appendStatement(_:guarded: false)`: a version that moved on fails the
    /// whole statement on the unique index. `appendResults` reads its rows. Planned once per connection (its
    /// plan holds for any arrays), like the batch's other statements, so the session's `plan_cache_mode` does
    /// not change back and forth within every batch.
    public static func appendStatement(forEach requests: [AppendRequest]) -> PostgresQuery {
        var streams: [String] = []
        var positions: [Int64] = []
        var types: [String] = []
        var datas: [String] = []
        var metadatas: [String] = []
        var recorded: [Double?] = []
        for request in requests {
            let base: Int64
            switch request.expectedVersion {
            case .exactly(let v): base = v
            case .noStream, .any: base = 0
            }
            precondition(request.expectedVersion != .any, "a batched append needs a version")
            for (k, event) in request.events.enumerated() {
                streams.append(request.streamName)
                positions.append(base + Int64(k) + 1)
                types.append(event.type)
                datas.append(event.data)
                metadatas.append(event.metadata.jsonText)
                recorded.append(request.recordedAt)
            }
        }
        let query: PostgresQuery = """
            INSERT INTO events (stream_name, position, type, data, metadata, recorded_at)
            SELECT x.s, x.p, x.t, x.d::jsonb, x.m::jsonb, COALESCE(to_timestamp(x.r), now())
            FROM unnest(\(PostgresBinaryArray(streams))::text[], \(PostgresBinaryArray(positions))::bigint[],
                        \(PostgresBinaryArray(types))::text[], \(PostgresBinaryArray(datas))::text[],
                        \(PostgresBinaryArray(metadatas))::text[], \(PostgresBinaryArray(recorded))::float8[]) AS x(s, p, t, d, m, r)
            ORDER BY x.s, x.p
            RETURNING stream_name, position, global_position, extract(epoch FROM recorded_at)::float8 AS recorded_at
            """
        return query.plannedOnce()
    }

    /// The result of each request of an `appendStatement(forEach:)` (or of one `appendStatement`), in order.
    public static func appendResults(_ requests: [AppendRequest], _ rows: PostgresRows) throws -> [AppendResult] {
        var byStream: [String: [(Int64, Int64, Double)]] = [:]
        for row in rows.rows {
            byStream[try row.string("stream_name"), default: []].append(
                (try row.int64("position"), try row.int64("global_position"), try row.double("recorded_at")))
        }
        return try requests.map { request in
            // Several requests may append to one stream, one after the other (a batch's consecutive commands
            // on one visit): each takes the rows at its own positions, right after its expected version.
            var events = (byStream[request.streamName] ?? []).sorted { $0.0 < $1.0 }
            let base: Int64? =
                switch request.expectedVersion {
                case .exactly(let v): v
                case .noStream: 0
                case .any: nil
                }
            if let base {
                let mine = (base + 1)...(base + Int64(request.events.count))
                events = events.filter { mine.contains($0.0) }
            }
            guard events.count == request.events.count, let first = events.first else {
                throw PostgresError(
                    code: .protocolViolation,
                    message: "an append of \(request.events.count) events to \(request.streamName) inserted \(events.count)")
            }
            return AppendResult(
                streamName: request.streamName, firstPosition: first.0, lastPosition: events.last!.0,
                globalPositions: events.map(\.1), recordedAt: first.2)
        }
    }

    /// The result of an `appendStatement`: its rows, or — when it inserted nothing — the conflict with the
    /// stream's version.
    public static func appendResult(_ request: AppendRequest, _ rows: PostgresRows, on connection: PostgresConnection) throws
        -> AppendResult
    {
        guard !rows.isEmpty else { throw conflict(request, actual: try version(of: request.streamName, on: connection)) }
        return try appendResults([request], rows)[0]
    }

    /// What a failed `appendStatement` means: a unique violation on a position is a lost race, a conflict
    /// with the stream's version (read again when no aborted transaction is in the way); invalid JSON is
    /// `invalidEventData`; other errors pass through.
    public static func appendFailure(_ error: PostgresError, _ request: AppendRequest, on connection: PostgresConnection) throws
        -> any Error
    {
        if error.sqlState == "22P02" {
            return EventStoreError(code: .invalidEventData, message: "event data is not valid JSON: \(error.message)")
        }
        guard error.code == .uniqueViolation, error.constraint == nil || error.constraint == "events_stream_position" else {
            return error
        }
        // Inside a transaction that the error aborted nothing more can be read: the caller rolls back and retries.
        let actual = connection.inTransaction ? nil : try version(of: request.streamName, on: connection)
        let fallback: Int64 =
            switch request.expectedVersion {
            case .exactly(let v): v + 1
            case .noStream: 1
            case .any: 0
            }
        return conflict(request, actual: actual ?? fallback)
    }

    // MARK: reads

    /// The stream's version (its last position; 0 when it does not exist).
    public static func version(of stream: String, on connection: PostgresConnection) throws -> Int64 {
        let rows = try connection.query("SELECT COALESCE(max(position), 0) AS v FROM events WHERE stream_name = \(stream)")
        return try rows.first!.int64("v")
    }

    public func readStream(_ stream: String, from position: Int64 = 1) async throws -> [RecordedEvent] {
        do {
            return try await pool.withConnection { try EventStore.readStream(stream, from: position, on: $0) }
        } catch {
            throw EventStoreError.wrap(error)
        }
    }

    public static func readStream(_ stream: String, from position: Int64 = 1, on connection: PostgresConnection) throws
        -> [RecordedEvent]
    {
        let rows = try connection.query(
            """
            SELECT \(identifier: "global_position"), stream_name, position, type, data::text AS data, metadata::text AS metadata,
                   transaction_id::text AS transaction_id, extract(epoch FROM recorded_at)::float8 AS recorded_at
            FROM events WHERE stream_name = \(stream) AND position >= \(position) ORDER BY position
            """)
        return try rows.rows.map(decode)
    }

    /// Events after `checkpoint` in follow order, only from transactions that can no longer commit
    /// (below the oldest running transaction), so no later read can find an event before these.
    public func readAll(after checkpoint: Checkpoint, limit: Int = 1000) async throws -> [RecordedEvent] {
        do {
            return try await pool.withConnection { try EventStore.readAll(after: checkpoint, limit: limit, on: $0) }
        } catch {
            throw EventStoreError.wrap(error)
        }
    }

    public static func readAll(after checkpoint: Checkpoint, limit: Int, on connection: PostgresConnection) throws
        -> [RecordedEvent]
    {
        let read: PostgresQuery = """
            SELECT global_position, stream_name, position, type, data::text AS data, metadata::text AS metadata,
                   transaction_id::text AS transaction_id, extract(epoch FROM recorded_at)::float8 AS recorded_at
            FROM events \(inFollowOrder(after: checkpoint, limit: limit))
            """
        let rows = try connection.query(read.plannedOnce())
        return try rows.rows.map(decode)
    }

    /// What a follower that keeps a memory of its own needs of an event: the stream and position it changed,
    /// its type, and its place in the log. Without the event's data and metadata, which such a follower reads
    /// from the rows the event changed instead.
    public struct Change: Sendable, Hashable {
        public let streamName: String
        public let position: Int64
        public let type: String
        public let checkpoint: Checkpoint
    }

    /// Every change after `checkpoint` that `readAll` can give now, in follow order, handed to `page` 1,000 at a
    /// time (the followers that keep a memory of their own: the technicians' days, the visits under way, the
    /// tracking pages); answers the checkpoint after the last one.
    public static func changes(
        after checkpoint: Checkpoint, on connection: PostgresConnection, page: ([Change]) throws -> Void
    ) throws -> Checkpoint {
        var at = checkpoint
        while true {
            let read: PostgresQuery = """
                SELECT global_position, stream_name, position, type, transaction_id::text AS transaction_id
                FROM events \(inFollowOrder(after: at, limit: 1000))
                """
            let rows = try connection.query(read.plannedOnce())
            let changes = try rows.rows.map { row in
                Change(
                    streamName: try row.string("stream_name"), position: try row.int64("position"),
                    type: try row.string("type"),
                    checkpoint: try Self.checkpoint(of: row))
            }
            try page(changes)
            if let last = changes.last { at = last.checkpoint }
            if changes.count < 1000 { return at }
        }
    }

    /// The events after `checkpoint` that no transaction can still add to, in follow order: the one place
    /// that says which events a follower may read. A statement reading them is planned once (`plannedOnce`): its
    /// plan, a walk of `events_follow_order` from the checkpoint, is the same for any checkpoint, and left to
    /// PostgreSQL's choice it was planned anew at nearly every call beside a fleet.
    static func inFollowOrder(after checkpoint: Checkpoint, limit: Int) -> PostgresQuery {
        """
        WHERE (transaction_id, global_position) > (\(String(checkpoint.transactionId))::xid8, \(checkpoint.globalPosition))
          AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY events.transaction_id, events.global_position  -- the xid8 column, not the text alias
        LIMIT \(limit)
        """
    }

    /// True when events after `checkpoint` are visible but not yet readable, because a transaction older
    /// than theirs is still open (they wait behind the snapshot horizon).
    public static func hasEventsBehindHorizon(after checkpoint: Checkpoint, on connection: PostgresConnection) throws -> Bool {
        let rows = try connection.query(
            """
            SELECT EXISTS (
                SELECT 1 FROM events
                WHERE (transaction_id, global_position) > (\(String(checkpoint.transactionId))::xid8, \(checkpoint.globalPosition))
                  AND transaction_id >= pg_snapshot_xmin(pg_current_snapshot())
            ) AS held
            """)
        return try rows.first?.bool("held") ?? false
    }

    /// One event after a follower's checkpoint that follow order has not given yet, as much of it as the
    /// follower needs to know what it may have changed.
    public struct EventBehindHorizon: Sendable, Hashable {
        public let streamName: String
        public let position: Int64
        public let type: String
    }

    /// Up to `limit` events after `checkpoint`, newest first: for a follower that has just read the log in
    /// follow order up to `checkpoint` (`changes(after:)`) and must not wait for the snapshot horizon to show a
    /// change (a tracking page, the technicians' board). They are the events committed behind a transaction
    /// still open anywhere in the cluster, and any committed since the follower's read; it looks at their
    /// streams' rows without moving its checkpoint past them, and follow order gives them once the horizon has
    /// passed. Not only those behind this statement's horizon: the follower's read had a snapshot of its own, a
    /// moment older, and an event behind that one's horizon but not behind this one's would be in neither.
    public static func eventsNotYetFollowed(after checkpoint: Checkpoint, limit: Int, on connection: PostgresConnection)
        throws -> [EventBehindHorizon]
    {
        // Planned once, as the reads in follow order are (`inFollowOrder`).
        let read: PostgresQuery = """
            SELECT stream_name, position, type FROM events
            WHERE (transaction_id, global_position) > (\(String(checkpoint.transactionId))::xid8, \(checkpoint.globalPosition))
            ORDER BY events.transaction_id DESC, events.global_position DESC
            LIMIT \(limit)
            """
        let rows = try connection.query(read.plannedOnce())
        return try rows.rows.map {
            EventBehindHorizon(
                streamName: try $0.string("stream_name"), position: try $0.int64("position"), type: try $0.string("type"))
        }
    }

    /// The last checkpoint in follow order of everything committed so far (the end of the log for a reader).
    public static func head(on connection: PostgresConnection) throws -> Checkpoint {
        let rows = try connection.query(
            """
            SELECT transaction_id::text AS transaction_id, global_position FROM events
            WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1  -- xid8, not the text alias
            """)
        guard let row = rows.first else { return .start }
        return try checkpoint(of: row)
    }

    // MARK: checkpoints

    /// The checkpoint a row names in its `transaction_id` (as text) and `global_position` columns.
    static func checkpoint(of row: PostgresRow) throws -> Checkpoint {
        Checkpoint(
            transactionId: UInt64(try row.string("transaction_id")) ?? 0, globalPosition: try row.int64("global_position"))
    }

    /// A follower's stored checkpoint (`.start` when it has none).
    public static func checkpoint(named name: String, on connection: PostgresConnection) throws -> Checkpoint {
        let rows = try connection.query(
            "SELECT transaction_id::text AS transaction_id, global_position FROM projection_checkpoints WHERE name = \(name)")
        guard let row = rows.first else { return .start }
        return try checkpoint(of: row)
    }

    public func checkpoint(named name: String) async throws -> Checkpoint {
        try await pool.withConnection { try EventStore.checkpoint(named: name, on: $0) }
    }

    /// Moves a checkpoint from `expected` to `new` (compare-and-set); `checkpointConflict` if another reader
    /// moved it. Call inside the transaction that writes the follower's results, so both commit together.
    public static func advanceCheckpoint(
        named name: String, from expected: Checkpoint, to new: Checkpoint, on connection: PostgresConnection
    ) throws {
        let rows: PostgresRows
        if expected == .start {
            rows = try connection.query(
                """
                INSERT INTO projection_checkpoints AS c (name, transaction_id, global_position)
                VALUES (\(name), \(String(new.transactionId))::xid8, \(new.globalPosition))
                ON CONFLICT (name) DO UPDATE SET transaction_id = excluded.transaction_id,
                    global_position = excluded.global_position, updated_at = now()
                WHERE c.transaction_id = '0'::xid8 AND c.global_position = 0
                RETURNING 1
                """)
        } else {
            rows = try connection.query(
                """
                UPDATE projection_checkpoints SET transaction_id = \(String(new.transactionId))::xid8,
                    global_position = \(new.globalPosition), updated_at = now()
                WHERE name = \(name) AND transaction_id = \(String(expected.transactionId))::xid8
                  AND global_position = \(expected.globalPosition)
                RETURNING 1
                """)
        }
        if rows.isEmpty {
            throw EventStoreError(code: .checkpointConflict, message: "checkpoint \(name) was moved by another reader")
        }
    }

    // MARK: operations

    /// The oldest open transaction that holds an id, i.e. what holds followers back, if any.
    public func snapshotHorizonHolder() async throws -> SnapshotHorizonHolder? {
        try await pool.withConnection { try EventStore.snapshotHorizonHolder(on: $0) }
    }

    public static func snapshotHorizonHolder(on connection: PostgresConnection) throws -> SnapshotHorizonHolder? {
        let rows = try connection.query(
            """
            SELECT pid, datname, usename, state, application_name,
                   extract(epoch FROM (now() - xact_start))::float8 AS age, left(query, 200) AS query
            FROM pg_stat_activity
            WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
            ORDER BY xact_start ASC LIMIT 1
            """)
        guard let row = rows.first else { return nil }
        return SnapshotHorizonHolder(
            pid: try row.int("pid"), database: row["datname"], user: row["usename"], state: row["state"],
            applicationName: row["application_name"], transactionAgeSeconds: row.optionalDouble("age") ?? 0,
            query: row["query"])
    }

    // MARK: private

    /// Checks a request against the limits (`invalidStreamName`, `invalidEventType`, `eventTooLarge`, …).
    public static func validate(_ request: AppendRequest, limits: EventStoreLimits) throws {
        let name = request.streamName
        if name.isEmpty || name.utf8.count > limits.maxStreamNameLength
            // (The control characters, Unicode's category Cc, are these two ranges: no property lookup per scalar.)
            || name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        {
            throw EventStoreError(
                code: .invalidStreamName,
                message: "stream name must be 1 to \(limits.maxStreamNameLength) bytes without control characters")
        }
        if request.events.isEmpty || request.events.count > limits.maxEventsPerAppend {
            throw EventStoreError(code: .invalidEventData, message: "an append carries 1 to \(limits.maxEventsPerAppend) events")
        }
        for event in request.events {
            let t = event.type
            if t.isEmpty || t.utf8.count > limits.maxEventTypeLength
                || !t.utf8.allSatisfy({ byte in
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                        true
                    default: false
                    }
                })
            {
                throw EventStoreError(
                    code: .invalidEventType,
                    message: "event type must be 1 to \(limits.maxEventTypeLength) ASCII letters, digits, '.', '_' or '-'")
            }
            if event.data.utf8.count > limits.maxEventDataBytes {
                throw EventStoreError(
                    code: .eventTooLarge,
                    message: "event data is \(event.data.utf8.count) bytes; the limit is \(limits.maxEventDataBytes)")
            }
        }
    }

    static func conflict(_ request: AppendRequest, actual: Int64) -> EventStoreError {
        let expected: String
        switch request.expectedVersion {
        case .any: expected = "any"
        case .noStream: expected = "no stream"
        case .exactly(let v): expected = String(v)
        }
        return EventStoreError(
            code: .wrongExpectedVersion,
            message: "stream \(request.streamName) is at version \(actual), expected \(expected)",
            actualVersion: actual)
    }

    static func decode(_ row: PostgresRow) throws -> RecordedEvent {
        let metadata = EventMetadata(jsonText: row["metadata"] ?? "{}")
        return RecordedEvent(
            globalPosition: try row.int64("global_position"), streamName: try row.string("stream_name"),
            position: try row.int64("position"), type: try row.string("type"), data: try row.string("data"),
            metadata: metadata, transactionId: UInt64(try row.string("transaction_id")) ?? 0,
            recordedAt: try row.double("recorded_at"))
    }
}
