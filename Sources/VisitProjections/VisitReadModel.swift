import EventStore
import Foundation
import JSON
import Postgres
import VisitDomain

/// The visit read model (`visits` table): one row per visit with the folded state and what the rules in force
/// gave it (relevance, stale date, dismissal), from which the view served by `GET /v1/visits/{id}` is drawn.
/// Maintained by the statement in `Projections/visits.sql`, in the same transaction as the visit's events (see
/// `VisitCommands`), and rebuilt from the log by `rebuild` (`livevisits replay`).
public struct VisitReadModel: Sendable {
    /// The projection's name for `livevisits replay` and checkpoints.
    public static let name = "visits"
    public static let table = "visits"
    /// A visit's stream is this prefix and its id (`VisitCommandHandler.streamName(for:)`).
    public static let streamPrefix = "visit-"

    /// The visit whose event stream `streamName` is; nil for any other stream.
    public static func visitId(ofStream streamName: String) -> String? {
        streamName.hasPrefix(streamPrefix) ? String(streamName.dropFirst(streamPrefix.count)) : nil
    }

    public let rules: ProjectionRules
    /// The technicians read model, kept with this one: every write of visit rows writes their technicians'
    /// rows too (`upsertStatements`).
    public let technicians: TechnicianReadModel
    /// The upsert statement from `Projections/visits.sql`, with `{table}` still in it.
    let upsertTemplate: String
    /// The template for the live table, resolved once.
    let liveUpsert: String

    public struct LoadError: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    /// Loads the read-model SQL from the projections folder (`LIVEVISITS_PROJECTIONS_DIR`), the technicians'
    /// (`TechnicianReadModel`) with it.
    public init(projectionsDirectory: URL, rules: ProjectionRules) throws {
        let file = projectionsDirectory.appendingPathComponent("visits.sql")
        guard let sql = try? String(contentsOf: file, encoding: .utf8) else {
            throw LoadError(message: "cannot read \(file.path) (set LIVEVISITS_PROJECTIONS_DIR to the Projections folder)")
        }
        guard sql.contains("{table}") else {
            throw LoadError(message: "\(file.path): the statement must name its table as {table}")
        }
        self.upsertTemplate = sql
        self.liveUpsert = sql.replacingOccurrences(of: "{table}", with: "\"\(VisitReadModel.table)\"")
        self.rules = rules
        self.technicians = try TechnicianReadModel(projectionsDirectory: projectionsDirectory)
    }

    /// One stored row.
    public struct Row: Sendable, Equatable {
        public let visitId: String
        public let customerId: String
        public let technicianId: String
        public let status: String
        public let ended: Bool
        public let version: Int64
        public let scheduledAt: Int64
        /// The global position of the visit's `scheduled` event: the booking order, which breaks ties between
        /// visits scheduled in the same second.
        public let booked: Int64
        /// The view JSON as served, without `liveActivities` (drawn from the stored state).
        public let view: String
        /// The visit's location as stored (sealed; `VisitState.location`): not in `view`, since only some
        /// callers may see it (`body(liveActivities:channels:location:)`).
        public var location: String? = nil

        /// The response body of `GET /v1/visits/{id}`; with `showingLocation`, and when the visit was booked
        /// with one, `location` last (the sealed text, opened on the way out: `null` once the customer is erased).
        public func body(liveActivities: Int, channels: [VisitReadModel.Channel] = [], showingLocation: Bool = false)
            -> String
        {
            let body = VisitReadModel.body(view: view, liveActivities: liveActivities, channels: channels)
            guard showingLocation, let location, body.utf8.last == UInt8(ascii: "}") else { return body }
            return String(decoding: body.utf8.dropLast(), as: UTF8.self) + ",\"location\":"
                + JSONValue.string(location).serializedString() + "}"
        }
    }

    /// A visit's response body: its stored view text with `liveActivities` added.
    /// Its SQL twin, for an answer stored in the writing transaction itself, is
    /// `IdempotencyStore.storeVisitAnswerStatement` (`IdempotencyStoreTests` pins the two byte for byte).
    public static func body(view: String, liveActivities: Int, channels: [Channel] = []) -> String {
        // On every visit answer: drop the closing brace as a byte, not by walking the String's characters.
        guard view.utf8.last == UInt8(ascii: "}") else { return view }
        let list = JSONValue.array(
            channels.map {
                .object([JSONMember("channelId", .string($0.channelId)), JSONMember("environment", .string($0.environment))])
            })
        return String(decoding: view.utf8.dropLast(), as: UTF8.self) + ",\"liveActivities\":\(liveActivities)"
            + ",\"channels\":" + list.serializedString() + "}"
    }

    /// A broadcast channel of the visit as its answer lists it (contract §7), by environment.
    public struct Channel: Sendable, Hashable {
        public var channelId: String
        public var environment: String
        public init(channelId: String, environment: String) {
            self.channelId = channelId
            self.environment = environment
        }
    }

    /// The view text of a state through the rules in force: the contract's JSON with `liveActivities` left for
    /// the answer (`body(view:liveActivities:channels:)`).
    public func viewText(for state: VisitState) -> String {
        Self.viewText(VisitView(state: state, rules: rules))
    }

    /// The view text of a stored row: its state with what the rules gave it when it was written.
    static func viewText(_ view: VisitView) -> String {
        var body = view.json(liveActivities: 0)
        if case .object(var members) = body {
            members.removeAll { $0.key == "liveActivities" }
            body = .object(members)
        }
        return body.serializedString()
    }

    /// The bind parameters of one upsert: the states encoded (the CPU half of a write).
    public struct EncodedBatch: Sendable {
        let binds: [PostgresBind]
        public let count: Int
        /// The view text of each state (`viewText(for:)`), in order.
        public let views: [String]
        /// The same states' rows of the technicians read model.
        let technicians: TechnicianReadModel.EncodedBatch
    }

    /// One state encoded for the upsert: its columns (its snapshot and what the rules gave it), with its view
    /// text for the command's answer.
    public struct EncodedRow: Sendable {
        let visitId: String
        let customerId: String
        let technicianId: String
        let status: String
        let ended: Bool
        let version: Int64
        let scheduledAt: Int64
        /// The view text of the state (`viewText(for:)`): not stored, the answer's.
        public let view: String
        let snapshot: String
        let ruled: VisitView.Ruled
        /// The state itself, for the technicians read model's row.
        let state: VisitState
    }

    /// Encodes one state (its view text and snapshot: the costly part of `encode`).
    public func encodeRow(_ state: VisitState) -> EncodedRow {
        let ruled = VisitView.Ruled(state: state, rules: rules)
        return EncodedRow(
            visitId: state.visitId, customerId: state.customerId, technicianId: state.technician.id,
            status: state.status.rawValue, ended: state.hasEnded, version: Int64(state.version),
            scheduledAt: Int64(state.scheduledAt), view: Self.viewText(VisitView(state: state, ruled: ruled)),
            snapshot: state.snapshotJSON().serializedString(), ruled: ruled, state: state)
    }

    /// Encodes states for `write` (view text and snapshot per state).
    public func encode(_ states: [VisitState]) -> EncodedBatch {
        encode(states.map(encodeRow))
    }

    /// A batch of encoded rows for `write` (at most one per visit).
    public func encode(_ rows: [EncodedRow]) -> EncodedBatch {
        EncodedBatch(
            binds: [
                PostgresBinaryArray(rows.map(\.visitId)).postgresBind, PostgresBinaryArray(rows.map(\.customerId)).postgresBind,
                PostgresBinaryArray(rows.map(\.technicianId)).postgresBind, PostgresBinaryArray(rows.map(\.status)).postgresBind,
                PostgresBinaryArray(rows.map(\.ended)).postgresBind, PostgresBinaryArray(rows.map(\.version)).postgresBind,
                PostgresBinaryArray(rows.map(\.scheduledAt)).postgresBind, PostgresBinaryArray(rows.map(\.snapshot)).postgresBind,
                PostgresBinaryArray(rows.map(\.ruled.relevanceScore)).postgresBind,
                PostgresBinaryArray(rows.map { $0.ruled.staleDate.map(Int64.init) }).postgresBind,
                PostgresBinaryArray(rows.map { $0.ruled.dismissal?.policy }).postgresBind,
                PostgresBinaryArray(rows.map { $0.ruled.dismissal?.date.map(Int64.init) }).postgresBind,
            ], count: rows.count, views: rows.map(\.view), technicians: technicians.encode(rows.map(\.state)))
    }

    /// The columns of a row as `appendCopyRows` writes them (the upsert's, less `updated_at`, left to its
    /// default `now()` as the upsert sets it).
    public static let copyColumns =
        "visit_id, customer_id, technician_id, status, ended, version, scheduled_at, state, relevance_score, stale_date, dismissal_policy, dismissal_date, booked"

    /// Appends each state with its booking order as one row of COPY text (`COPY table (copyColumns) FROM
    /// STDIN`): the same values as `encode` binds for the upsert (both from `encodeRow`), so a table filled
    /// either way holds the same rows (the replay's bulk write into a fresh table, where no row can conflict).
    public func appendCopyRows(_ rows: some Sequence<(state: VisitState, booked: Int64)>, to buffer: inout [UInt8]) {
        for (state, booked) in rows {
            let row = encodeRow(state)
            PostgresCopyText.append(row.visitId, to: &buffer)
            buffer.append(0x09)
            PostgresCopyText.append(row.customerId, to: &buffer)
            buffer.append(0x09)
            PostgresCopyText.append(row.technicianId, to: &buffer)
            buffer.append(0x09)
            PostgresCopyText.append(row.status, to: &buffer)
            buffer.append(0x09)
            buffer.append(row.ended ? UInt8(ascii: "t") : UInt8(ascii: "f"))
            buffer.append(0x09)
            buffer.append(contentsOf: String(row.version).utf8)
            buffer.append(0x09)
            buffer.append(contentsOf: String(row.scheduledAt).utf8)
            buffer.append(0x09)
            PostgresCopyText.append(row.snapshot, to: &buffer)
            buffer.append(0x09)
            buffer.append(contentsOf: "\(row.ruled.relevanceScore)".utf8)
            for value in [
                row.ruled.staleDate.map { "\($0)" }, row.ruled.dismissal?.policy, row.ruled.dismissal?.date.map { "\($0)" },
            ] {
                buffer.append(0x09)
                if let value { PostgresCopyText.append(value, to: &buffer) } else { buffer.append(contentsOf: "\\N".utf8) }
            }
            buffer.append(0x09)
            buffer.append(contentsOf: String(booked).utf8)
            buffer.append(0x0A)
        }
    }

    /// Writes an encoded batch (newest version wins; an older one never overwrites a newer one).
    public func write(_ batch: EncodedBatch, into table: String = VisitReadModel.table, on connection: PostgresConnection) throws
    {
        guard batch.count > 0 else { return }
        try connection.query(upsertStatement(batch, into: table))
    }

    /// The upsert of an encoded batch as a statement, to run with others (`PostgresConnection.pipeline`).
    /// Planned once per connection, as the command batch's other statements are (its plan holds for any arrays).
    public func upsertStatement(_ batch: EncodedBatch, into table: String = VisitReadModel.table) -> PostgresQuery {
        let sql =
            table == VisitReadModel.table
            ? liveUpsert : upsertTemplate.replacingOccurrences(of: "{table}", with: "\"\(table)\"")
        return PostgresQuery(sql: sql, binds: batch.binds).plannedOnce()
    }

    /// The statements that write an encoded batch: the visits' upsert, then the technicians' (which reads the
    /// visits' events: run them after the events' append, in its transaction).
    public func upsertStatements(_ batch: EncodedBatch) -> [PostgresQuery] {
        guard batch.count > 0 else { return [] }
        return [upsertStatement(batch), technicians.upsertStatement(batch.technicians)]
    }

    /// Writes the states (newest version wins; an older one never overwrites a newer one).
    public func upsert(_ states: [VisitState], into table: String = VisitReadModel.table, on connection: PostgresConnection)
        throws
    {
        try write(encode(states), into: table, on: connection)
    }

    /// The row of one visit.
    public static func row(visitId: String, on connection: PostgresConnection) throws -> Row? {
        try connection.query(selectRows("WHERE v.visit_id = \(visitId)")).first.map { try decode($0) }
    }

    /// `SELECT` of a `Row`'s columns from `visits v`, then `rest` — whose binds keep their numbers: the head has
    /// none.
    private static func selectRows(_ rest: PostgresQuery) -> PostgresQuery {
        PostgresQuery(
            sql: """
                SELECT v.visit_id, v.customer_id, v.technician_id, v.status, v.ended, v.version, v.scheduled_at, v.state,
                       v.relevance_score, v.stale_date, v.dismissal_policy, v.dismissal_date, v.booked
                FROM visits v

                """ + rest.sql, binds: rest.binds)
    }

    /// The folded state stored with a visit (nil when the visit does not exist).
    public static func state(visitId: String, on connection: PostgresConnection) throws -> VisitState? {
        guard
            let text = try connection.query("SELECT state FROM visits WHERE visit_id = \(visitId)").first?["state"]
        else { return nil }
        return try VisitState(snapshot: Array(text.utf8))
    }

    /// The ids of a technician's visits whose status is one of `statuses`, in id order (what a change to all of
    /// a technician's remaining visits at once goes through, in the order its writes take).
    public static func visitIds(technicianId: String, statuses: [String], on connection: PostgresConnection) throws
        -> [String]
    {
        try connection.query(
            """
            SELECT visit_id FROM visits
            WHERE technician_id = \(technicianId) AND status = ANY(\(PostgresBinaryArray(statuses))::text[])
            ORDER BY visit_id
            """
        ).rows.map { try $0.string("visit_id") }
    }

    /// Which visits a list may show and how to narrow them. Equal filters read equal pages (`GET /v1/visits`
    /// shares one read between them): the equality is the synthesized one, over every stored field.
    public struct ListFilter: Sendable, Hashable {
        public var customerId: String?
        public var technicianId: String?
        /// true: only ended visits; false: only active ones; nil: both.
        public var ended: Bool?
        public var limit: Int
        /// Resume after this (scheduled time, booking order: a row's `scheduledAt` and `booked`).
        public var after: (scheduledAt: Int64, booked: Int64)? {
            get { resumeAfter.map { ($0.scheduledAt, $0.booked) } }
            set { resumeAfter = newValue.map { Position(scheduledAt: $0.scheduledAt, booked: $0.booked) } }
        }
        /// `after`, stored as a value that is Hashable (a tuple is not).
        private var resumeAfter: Position?
        private struct Position: Hashable, Sendable {
            var scheduledAt: Int64
            var booked: Int64
        }

        public init(
            customerId: String? = nil, technicianId: String? = nil, ended: Bool? = nil, limit: Int = 50,
            after: (scheduledAt: Int64, booked: Int64)? = nil
        ) {
            self.customerId = customerId
            self.technicianId = technicianId
            self.ended = ended
            self.limit = limit
            self.after = after
        }
    }

    /// Visits newest scheduled first, and among those scheduled in the same second the latest booked first
    /// (the order of their `scheduled` events in the log); returns one more row than `limit` asks when there
    /// is a next page.
    /// With `cache`, a row whose stored state and ruled columns are the ones remembered is not decoded again.
    ///
    /// The statement names only the conditions the filter has, so each of its shapes has a plan of its own,
    /// made once per connection: by customer or technician their index, else `visits_by_schedule`, each in
    /// the list's order (a page reads its rows and stops).
    public static func list(_ filter: ListFilter, on connection: PostgresConnection, cache: VisitRowCache? = nil) throws
        -> [Row]
    {
        var conditions: [PostgresQuery] = []
        if let customerId = filter.customerId { conditions.append("v.customer_id = \(customerId)") }
        if let technicianId = filter.technicianId { conditions.append("v.technician_id = \(technicianId)") }
        if let ended = filter.ended { conditions.append("v.ended = \(ended)") }
        if let after = filter.after { conditions.append("(v.scheduled_at, v.booked) < (\(after.scheduledAt), \(after.booked))") }
        var rest: PostgresQuery = ""
        for condition in conditions { rest = rest.sql.isEmpty ? "WHERE \(condition)" : "\(rest) AND \(condition)" }
        rest = "\(rest)\nORDER BY v.scheduled_at DESC, v.booked DESC LIMIT \(filter.limit + 1)"
        let rows = try connection.query(selectRows(rest).plannedOnce()).rows
        guard let cache else { return try rows.map { try decode($0) } }
        // The memory is asked once for the page, and told once what was drawn afresh: a board's pages read
        // the same rows at once, and a lock taken per row made them wait for each other.
        let asked = try rows.map { (visitId: try $0.string("visit_id"), stored: try Self.stored($0)) }
        let known = cache.drawn(asked)
        var fresh: [(visitId: String, drawn: VisitRowCache.Drawn)] = []
        var page: [Row] = []
        page.reserveCapacity(rows.count)
        for (n, row) in rows.enumerated() {
            let (visitId, stored) = asked[n]
            let (view, location): (String, String?)
            if let drawn = known[n] {
                (view, location) = drawn
            } else {
                (view, location) = try draw(row, state: stored.state)
                fresh.append((visitId, VisitRowCache.Drawn(stored: stored, view: view, location: location)))
            }
            page.append(try decode(row, visitId: visitId, view: view, location: location))
        }
        cache.remember(fresh)
        return page
    }

    /// A row drawn afresh.
    static func decode(_ row: PostgresRow) throws -> Row {
        let (view, location) = try draw(row, state: try row.string("state"))
        return try decode(row, visitId: try row.string("visit_id"), view: view, location: location)
    }

    /// What a row draws: its stored state (`text`) parsed, and its view written with its ruled columns.
    static func draw(_ row: PostgresRow, state text: String) throws -> (view: String, location: String?) {
        let state = try VisitState(snapshot: Array(text.utf8))
        return (viewText(try drawnView(row, state: state)), state.location)
    }

    /// What `VisitRowCache` compares of a row.
    static func stored(_ row: PostgresRow) throws -> VisitRowCache.Stored {
        VisitRowCache.Stored(
            state: try row.string("state"), relevanceScore: row["relevance_score"], staleDate: row["stale_date"],
            dismissalPolicy: row["dismissal_policy"], dismissalDate: row["dismissal_date"])
    }

    static func decode(_ row: PostgresRow, visitId: String, view: String, location: String?) throws -> Row {
        Row(
            visitId: visitId, customerId: try row.string("customer_id"),
            technicianId: try row.string("technician_id"), status: try row.string("status"),
            ended: try row.bool("ended"), version: try row.int64("version"), scheduledAt: try row.int64("scheduled_at"),
            booked: try row.int64("booked"), view: view, location: location)
    }

    /// The view of a stored row: its state, with the relevance, stale date and dismissal its writing gave it.
    static func drawnView(_ row: PostgresRow, state: VisitState) throws -> VisitView {
        var dismissal: VisitDismissal?
        if let policy = row["dismissal_policy"] {
            dismissal = VisitDismissal(policy: policy, date: row.optionalInt64("dismissal_date").map(Int.init))
            guard dismissal != nil else {
                throw PostgresError(code: .protocolViolation, message: "visits.dismissal_policy: unknown \(policy)")
            }
        }
        let stale = row.optionalInt64("stale_date").map(Int.init)
        return VisitView(
            state: state,
            ruled: VisitView.Ruled(relevanceScore: try row.double("relevance_score"), staleDate: stale, dismissal: dismissal))
    }
}
