import Foundation
import Postgres

/// Group commit's database side: many appends in one statement (a "round"), each append succeeding or
/// failing on its own.
///
/// A round carries at most one append per stream and per idempotency key; later appends to the same stream
/// (or with the same key) go to the next round, where they see the earlier one's rows. Inside a round:
/// appends whose key is already recorded return the recorded result; the others read their stream's
/// version, fail alone with `wrongExpectedVersion` when it is not what they expect, and insert with
/// `ON CONFLICT DO NOTHING`, so a concurrent writer that took a position makes only that append come back
/// for another round (it then sees the writer's rows) instead of aborting the statement. Rows are inserted
/// sorted by (stream, position), so concurrent batches always lock in the same order and cannot deadlock
/// each other on the unique index.
extension EventStore {
    /// What a batch did for one append: settled (a result or an error), or not settled because the batch
    /// stopped early (the caller then appends it alone).
    typealias BatchSlot = Result<AppendResult, EventStoreError>?

    /// How many races with other transactions one append may lose in a batch before it gives up with
    /// `wrongExpectedVersion` (waiting behind an earlier append to its stream in the batch does not count).
    static let maxRounds = 8

    /// True when a batch of these appends should run without an explicit transaction: its one round is
    /// then one autocommitted statement, one round trip. That is safe only when no append can be half done
    /// by a round — a single event with no idempotency key is either inserted or not — and worth it only
    /// when the streams are distinct: appends to one stream need a round each, and in one transaction
    /// those rounds share a single commit (one WAL flush) instead of paying one each.
    static func canAutocommit(_ requests: [AppendRequest]) -> Bool {
        var streams = Set<String>()
        streams.reserveCapacity(requests.count)
        for request in requests {
            guard request.events.count == 1, request.idempotencyKey == nil, streams.insert(request.streamName).inserted
            else { return false }
        }
        return true
    }

    /// Appends a batch on `connection`. With `autocommit`, each round commits by itself (see
    /// `canAutocommit`); otherwise the caller runs this inside one transaction and commits it. A database
    /// error stops the batch: it is rethrown as `BatchStopped` with what was settled before it.
    static func appendBatch(_ requests: [AppendRequest], on connection: PostgresConnection, autocommit: Bool) throws -> [BatchSlot] {
        var slots = [BatchSlot](repeating: nil, count: requests.count)
        var pending = Array(requests.indices)
        var racesLost: [Int: Int] = [:]
        while !pending.isEmpty {
            // One append per stream and per key in this round; the rest wait for the next.
            var streams = Set<String>()
            var keys = Set<String>()
            var thisRound: [Int] = []
            var later: [Int] = []
            for i in pending {
                let r = requests[i]
                if streams.contains(r.streamName) || r.idempotencyKey.map(keys.contains) == true {
                    later.append(i)
                } else {
                    streams.insert(r.streamName)
                    if let key = r.idempotencyKey { keys.insert(key) }
                    thisRound.append(i)
                }
            }
            let outcomes: [RoundOutcome]
            do {
                outcomes = try runRound(thisRound.map { requests[$0] }, on: connection)
            } catch {
                throw BatchStopped(settled: slots, error: error)
            }
            var undo: [Int64] = []
            for (i, outcome) in zip(thisRound, outcomes) {
                switch outcome {
                case .settled(let result):
                    slots[i] = .success(result)
                case .conflict(let actual):
                    slots[i] = .failure(conflict(requests[i], actual: actual))
                case .retry(let version, let inserted):
                    undo += inserted
                    racesLost[i, default: 0] += 1
                    if racesLost[i]! >= maxRounds {
                        slots[i] = .failure(conflict(requests[i], actual: version, note: "lost \(maxRounds) races in a row"))
                    } else {
                        later.append(i)
                    }
                }
            }
            if !undo.isEmpty {
                // Half an append (a concurrent writer took some of its positions, or its key): take it back.
                precondition(!autocommit, "an autocommitted round cannot leave half an append")
                do {
                    try connection.query("DELETE FROM events WHERE global_position = ANY(\(undo)::bigint[])")
                } catch {
                    throw BatchStopped(settled: slots, error: error)
                }
            }
            pending = later.sorted()
        }
        return slots
    }

    /// A batch interrupted by a database error, with the appends it had settled (already committed when
    /// autocommitting; to be discarded when the enclosing transaction rolls back).
    struct BatchStopped: Error {
        let settled: [BatchSlot]
        let error: any Error
    }

    enum RoundOutcome {
        case settled(AppendResult)
        case conflict(actual: Int64)
        /// Lost a race inside the round: `inserted` rows to take back, then try again.
        case retry(version: Int64, inserted: [Int64])
    }

    /// One statement for a round of appends to distinct streams with distinct keys.
    static func runRound(_ requests: [AppendRequest], on connection: PostgresConnection) throws -> [RoundOutcome] {
        var streams: [String] = []
        var expected: [Int64?] = []
        var keys: [String?] = []
        var recorded: [Double?] = []
        var counts: [Int] = []
        var eventRequest: [Int] = []
        var eventOrdinal: [Int] = []
        var types: [String] = []
        var datas: [String] = []
        var metadatas: [String] = []
        for (n, request) in requests.enumerated() {
            streams.append(request.streamName)
            switch request.expectedVersion {
            case .any: expected.append(nil)
            case .noStream: expected.append(0)
            case .exactly(let v): expected.append(v)
            }
            keys.append(request.idempotencyKey)
            recorded.append(request.recordedAt)
            counts.append(request.events.count)
            for (k, event) in request.events.enumerated() {
                eventRequest.append(n + 1)
                eventOrdinal.append(k + 1)
                types.append(event.type)
                datas.append(event.data)
                metadatas.append(event.metadata.jsonText)
            }
        }
        let rows = try connection.query("""
            WITH req AS (
                SELECT * FROM unnest(\(streams)::text[], \(PostgresNullableArray(expected))::bigint[],
                                     \(PostgresNullableArray(keys))::text[], \(PostgresNullableArray(recorded))::float8[],
                                     \(counts)::int[])
                    WITH ORDINALITY AS r(stream_name, expected, idempotency_key, recorded, n, idx)
            ),
            prev AS (
                SELECT r.idx, i.stream_name, i.first_position, i.last_position, i.global_positions, i.recorded_at
                FROM req r JOIN event_idempotency i ON i.idempotency_key = r.idempotency_key
            ),
            cur AS (
                SELECT r.idx, r.stream_name, r.expected, r.idempotency_key, r.recorded, r.n,
                       (SELECT COALESCE(max(e.position), 0) FROM events e WHERE e.stream_name = r.stream_name) AS version
                FROM req r WHERE NOT EXISTS (SELECT 1 FROM prev p WHERE p.idx = r.idx)
            ),
            ins AS (
                INSERT INTO events (stream_name, position, type, data, metadata, recorded_at)
                SELECT c.stream_name, c.version + ev.ord, ev.t, ev.d::jsonb, ev.m::jsonb,
                       COALESCE(to_timestamp(c.recorded), now())
                FROM unnest(\(eventRequest)::int[], \(eventOrdinal)::int[], \(types)::text[], \(datas)::text[],
                            \(metadatas)::text[]) AS ev(req, ord, t, d, m)
                JOIN cur c ON c.idx = ev.req
                WHERE c.expected IS NULL OR c.expected = c.version
                ORDER BY c.stream_name, ev.ord
                ON CONFLICT (stream_name, position) DO NOTHING
                RETURNING stream_name, position, global_position, recorded_at
            ),
            done AS (
                SELECT c.idx, count(i.global_position) AS inserted,
                       array_agg(i.global_position ORDER BY i.position) FILTER (WHERE i.global_position IS NOT NULL) AS positions,
                       min(i.recorded_at) AS recorded_at
                FROM cur c LEFT JOIN ins i ON i.stream_name = c.stream_name
                GROUP BY c.idx
            ),
            keyed AS (
                INSERT INTO event_idempotency (idempotency_key, stream_name, first_position, last_position, global_positions, recorded_at)
                SELECT c.idempotency_key, c.stream_name, c.version + 1, c.version + c.n, d.positions, d.recorded_at
                FROM cur c JOIN done d ON d.idx = c.idx
                WHERE c.idempotency_key IS NOT NULL AND d.inserted = c.n
                ORDER BY c.idempotency_key
                ON CONFLICT (idempotency_key) DO NOTHING
                RETURNING idempotency_key
            )
            SELECT r.idx,
                   CASE WHEN p.idx IS NOT NULL THEN 'deduplicated'
                        WHEN NOT (c.expected IS NULL OR c.expected = c.version) THEN 'conflict'
                        WHEN d.inserted = c.n AND (c.idempotency_key IS NULL
                             OR EXISTS (SELECT 1 FROM keyed k WHERE k.idempotency_key = c.idempotency_key)) THEN 'appended'
                        ELSE 'retry' END AS outcome,
                   COALESCE(p.stream_name, r.stream_name) AS stream_name,
                   COALESCE(p.first_position, c.version + 1) AS first_position,
                   COALESCE(p.last_position, c.version + c.n) AS last_position,
                   COALESCE(c.version, 0) AS version,
                   COALESCE(array_to_string(COALESCE(p.global_positions, d.positions), ','), '') AS positions,
                   extract(epoch FROM COALESCE(p.recorded_at, d.recorded_at))::float8 AS recorded_at
            FROM req r
            LEFT JOIN prev p ON p.idx = r.idx
            LEFT JOIN cur c ON c.idx = r.idx
            LEFT JOIN done d ON d.idx = r.idx
            ORDER BY r.idx
            """)
        guard rows.count == requests.count else {
            throw PostgresError(code: .protocolViolation, message: "a batch of \(requests.count) appends answered \(rows.count) rows")
        }
        return try rows.rows.map { row in
            let positions = try row.string("positions").split(separator: ",").compactMap { Int64($0) }
            let version = try row.int64("version")
            switch try row.string("outcome") {
            case "deduplicated", "appended":
                return .settled(AppendResult(
                    streamName: try row.string("stream_name"), firstPosition: try row.int64("first_position"),
                    lastPosition: try row.int64("last_position"), globalPositions: positions,
                    recordedAt: row.optionalDouble("recorded_at") ?? 0, deduplicated: row["outcome"] == "deduplicated"))
            case "conflict":
                return .conflict(actual: version)
            default:
                return .retry(version: version, inserted: positions)
            }
        }
    }
}
