import Foundation
import JSON
import Postgres
import VisitDomain

/// The technicians read model (`technician_visits` table), behind `GET /v1/technicians`: one row per visit
/// with its technician, status, current arrival window and distance, from which a day by technician is read by
/// two indexed statements (`day`: `visits`, then `people`). Maintained by the statement in `Projections/technicians.sql`, in the same transaction
/// as the visit's events and `visits` row (`VisitReadModel.upsertStatements`), and rebuilt from the log by
/// `VisitReplay` (`livevisits replay technicians`). It holds no personal field: a technician's name, avatar and
/// van are the dispatcher's words, not the customer's.
public struct TechnicianReadModel: Sendable {
    /// The projection's name for `livevisits replay` and `POST /v1/ops/projections/{name}/rebuild`.
    public static let name = "technicians"
    public static let table = "technician_visits"
    /// The statement's file in the projections directory.
    public static let fileName = "technicians.sql"

    /// The upsert statement from `Projections/technicians.sql`, with `{table}` still in it.
    let upsertTemplate: String
    /// The template for the live table, resolved once.
    let liveUpsert: String

    /// Loads the read-model SQL from the projections directory (`LIVEVISITS_PROJECTIONS_DIR`).
    public init(projectionsDirectory: URL) throws {
        let file = projectionsDirectory.appendingPathComponent(Self.fileName)
        guard let sql = try? String(contentsOf: file, encoding: .utf8) else {
            throw VisitReadModel.LoadError(
                message: "cannot read \(file.path) (set LIVEVISITS_PROJECTIONS_DIR to the Projections folder)")
        }
        guard sql.contains("{table}") else {
            throw VisitReadModel.LoadError(message: "\(file.path): the statement must name its table as {table}")
        }
        upsertTemplate = sql
        liveUpsert = sql.replacingOccurrences(of: "{table}", with: "\"\(Self.table)\"")
    }

    /// The bind parameters of one upsert (one row per visit, at most one per visit).
    public struct EncodedBatch: Sendable {
        let binds: [PostgresBind]
        public let count: Int
    }

    /// Encodes states for the upsert (the last state of each visit; the statement reads the position of the
    /// booking or reassignment from the log).
    public func encode(_ states: [VisitState]) -> EncodedBatch {
        EncodedBatch(
            binds: [
                PostgresBinaryArray(states.map(\.visitId)).postgresBind,
                PostgresBinaryArray(states.map(\.technician.id)).postgresBind,
                PostgresBinaryArray(states.map(\.technician.name)).postgresBind,
                PostgresBinaryArray(states.map(\.technician.avatarSymbol)).postgresBind,
                PostgresBinaryArray(states.map(\.technician.vanDescription)).postgresBind,
                PostgresBinaryArray(states.map(\.status.rawValue)).postgresBind,
                PostgresBinaryArray(states.map { Int64($0.arrivalWindow.start) }).postgresBind,
                PostgresBinaryArray(states.map { Int64($0.arrivalWindow.end) }).postgresBind,
                PostgresBinaryArray(states.map(\.kilometresAway)).postgresBind,
                PostgresBinaryArray(states.map { Int64($0.version) }).postgresBind,
            ], count: states.count)
    }

    /// The upsert of an encoded batch as a statement, to run after the batch's events in their transaction.
    /// Planned once per connection, as the command batch's other statements are.
    public func upsertStatement(_ batch: EncodedBatch, into table: String = TechnicianReadModel.table) -> PostgresQuery {
        let sql =
            table == Self.table ? liveUpsert : upsertTemplate.replacingOccurrences(of: "{table}", with: "\"\(table)\"")
        return PostgresQuery(sql: sql, binds: batch.binds).plannedOnce()
    }

    /// The columns `appendCopyRows` writes (a replay's bulk write into a fresh table); `assigned_position` is
    /// then read from the log by `assignedPositionsStatement`.
    static let copyColumns =
        "visit_id, technician_id, technician_name, avatar_symbol, van_description, assigned_position, status, window_start, window_end, kilometres_away, version"

    /// Appends each state as one row of COPY text, the same values `encode` binds for the upsert, with
    /// `assigned_position` 0 until `assignedPositionsStatement` sets it.
    static func appendCopyRows(_ states: some Sequence<VisitState>, to buffer: inout [UInt8]) {
        for state in states {
            for text in [state.visitId, state.technician.id, state.technician.name, state.technician.avatarSymbol] {
                PostgresCopyText.append(text, to: &buffer)
                buffer.append(0x09)
            }
            PostgresCopyText.append(state.technician.vanDescription, to: &buffer)
            buffer.append(contentsOf: "\t0\t".utf8)
            PostgresCopyText.append(state.status.rawValue, to: &buffer)
            buffer.append(contentsOf: "\t\(state.arrivalWindow.start)\t\(state.arrivalWindow.end)\t\(state.kilometresAway)".utf8)
            buffer.append(contentsOf: "\t\(state.version)\n".utf8)
        }
    }

    /// Sets every row's `assigned_position` in `table` as the upsert computes it: the global position of the
    /// visit's latest `scheduled` or `reassigned` event at or below the row's version.
    static func assignedPositionsStatement(table: String) -> String {
        """
        UPDATE \(table) t SET assigned_position = COALESCE((SELECT e.global_position FROM events e
            WHERE e.stream_name = '\(VisitReadModel.streamPrefix)' || t.visit_id AND e.position <= t.version
              AND e.type IN ('scheduled', 'reassigned')
            ORDER BY e.position DESC LIMIT 1), 0)
        """
    }

    /// A technician and their visits of one day, as `GET /v1/technicians` answers them.
    public struct Technician: Sendable, Equatable {
        public let id: String
        /// The name, avatar and van of the latest booking or reassignment that named them.
        public let name: String
        public let avatarSymbol: String
        public let vanDescription: String
        /// By window start, then end, then visit id.
        public var visits: [Visit]

        public init(id: String, name: String, avatarSymbol: String, vanDescription: String, visits: [Visit]) {
            self.id = id
            self.name = name
            self.avatarSymbol = avatarSymbol
            self.vanDescription = vanDescription
            self.visits = visits
        }

        /// Appends this technician as one element of the day's answer (`TechnicianReadModel.json`).
        public func writeJSON(to out: inout [UInt8]) {
            func member(_ name: StaticString, first: Bool = false) {
                if !first { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "\""))
                out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
                out.append(contentsOf: "\":".utf8)
            }
            out.append(UInt8(ascii: "{"))
            member("id", first: true)
            JSONValue.writeString(id, to: &out)
            member("name")
            JSONValue.writeString(name, to: &out)
            member("avatarSymbol")
            JSONValue.writeString(avatarSymbol, to: &out)
            member("vanDescription")
            JSONValue.writeString(vanDescription, to: &out)
            member("visits")
            out.append(UInt8(ascii: "["))
            for (v, visit) in visits.enumerated() {
                if v > 0 { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "{"))
                member("visitId", first: true)
                JSONValue.writeString(visit.visitId, to: &out)
                member("status")
                JSONValue.writeString(visit.status, to: &out)
                member("arrivalWindow")
                out.append(UInt8(ascii: "{"))
                member("start", first: true)
                JSONValue.writeInteger(visit.windowStart, to: &out)
                member("end")
                JSONValue.writeInteger(visit.windowEnd, to: &out)
                out.append(UInt8(ascii: "}"))
                member("kilometresAway")
                JSONValue.writeNumber(visit.kilometresAway, to: &out)
                out.append(UInt8(ascii: "}"))
            }
            out.append(contentsOf: "]}".utf8)
        }
    }

    /// One visit of a technician's day.
    public struct Visit: Sendable, Equatable {
        public let visitId: String
        public let status: String
        public let windowStart: Int64
        public let windowEnd: Int64
        public let kilometresAway: Double

        public init(visitId: String, status: String, windowStart: Int64, windowEnd: Int64, kilometresAway: Double) {
            self.visitId = visitId
            self.status = status
            self.windowStart = windowStart
            self.windowEnd = windowEnd
            self.kilometresAway = kilometresAway
        }

        /// A technician's visits' order: by window start, then end, then id (in code-point order).
        public static func precedes(_ a: Visit, _ b: Visit) -> Bool {
            if a.windowStart != b.windowStart { return a.windowStart < b.windowStart }
            if a.windowEnd != b.windowEnd { return a.windowEnd < b.windowEnd }
            return a.visitId.utf8.lexicographicallyPrecedes(b.visitId.utf8)
        }
    }

    /// The day's answer, `{"technicians": [...]}`, written as bytes straight from the technicians: a fleet's
    /// day is tens of thousands of visits and several megabytes, and a `JSONValue` tree of it cost as much time
    /// again and several times its size in memory. Members in the contract's order; numbers as `JSONValue`
    /// writes them.
    public static func json(_ technicians: [Technician]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + technicians.count * 160 + technicians.reduce(0) { $0 + $1.visits.count } * 130)
        out.append(contentsOf: #"{"technicians":["#.utf8)
        for (t, technician) in technicians.enumerated() {
            if t > 0 { out.append(UInt8(ascii: ",")) }
            technician.writeJSON(to: &out)
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }

    /// The technicians with a visit whose current window starts in `[from, to)` (epoch seconds), in the day's
    /// order (`precedes`), each with those visits in theirs. Two plain statements, the order made here: the day's
    /// rows by the window index, then each technician's name by the assignment index (PostgreSQL's sort of a whole
    /// day, with a CTE and a lateral join, was most of what one statement over it cost).
    public static func day(from: Int64, to: Int64, on connection: PostgresConnection) throws -> [Technician] {
        var byTechnician: [String: [Visit]] = [:]
        for (technicianId, visit) in try visits(startingFrom: from, to: to, on: connection) {
            byTechnician[technicianId, default: []].append(visit)
        }
        let people = try people(of: Set(byTechnician.keys), on: connection)
        return byTechnician.map { id, visits in
            let person = people[id] ?? Person(name: "", avatarSymbol: "", vanDescription: "")
            return Technician(
                id: id, name: person.name, avatarSymbol: person.avatarSymbol, vanDescription: person.vanDescription,
                visits: visits.sorted(by: Visit.precedes))
        }.sorted { precedes(($0.name, $0.id), ($1.name, $1.id)) }
    }

    /// A technician's name, avatar and van: those of their latest booking or reassignment, on whatever day.
    public struct Person: Sendable, Equatable {
        public var name: String
        public var avatarSymbol: String
        public var vanDescription: String

        public init(name: String, avatarSymbol: String, vanDescription: String) {
            self.name = name
            self.avatarSymbol = avatarSymbol
            self.vanDescription = vanDescription
        }
    }

    /// The day's order of technicians: by name, then id, both in code-point order (whatever the database's
    /// collation).
    public static func precedes(_ a: (name: String, id: String), _ b: (name: String, id: String)) -> Bool {
        a.name == b.name ? a.id.utf8.lexicographicallyPrecedes(b.id.utf8) : a.name.utf8.lexicographicallyPrecedes(b.name.utf8)
    }

    static let visitColumns: PostgresQuery = "visit_id, technician_id, status, window_start, window_end, kilometres_away"

    /// The visits whose current window starts in `[from, to)`, each with its technician, in no order.
    public static func visits(startingFrom from: Int64, to: Int64, on connection: PostgresConnection) throws
        -> [(technicianId: String, visit: Visit)]
    {
        try visits(
            "SELECT \(visitColumns) FROM technician_visits WHERE window_start >= \(from) AND window_start < \(to)", on: connection
        )
    }

    /// The rows of `visitIds` there are, each with its technician, in no order.
    public static func visits(_ visitIds: Set<String>, on connection: PostgresConnection) throws
        -> [(technicianId: String, visit: Visit)]
    {
        try visits(
            "SELECT \(visitColumns) FROM technician_visits WHERE visit_id = ANY(\(PostgresBinaryArray(Array(visitIds)))::text[])",
            on: connection)
    }

    private static func visits(_ statement: PostgresQuery, on connection: PostgresConnection) throws
        -> [(technicianId: String, visit: Visit)]
    {
        try connection.query(statement).rows.map { row in
            (
                try row.string("technician_id"),
                Visit(
                    visitId: try row.string("visit_id"), status: try row.string("status"),
                    windowStart: try row.int64("window_start"), windowEnd: try row.int64("window_end"),
                    kilometresAway: try row.double("kilometres_away"))
            )
        }
    }

    /// The name, avatar and van of each of `technicians` that has a row (one probe of
    /// `technician_visits_by_assignment` each, however many days the table holds).
    public static func people(of technicians: Set<String>, on connection: PostgresConnection) throws -> [String: Person] {
        guard !technicians.isEmpty else { return [:] }
        var people: [String: Person] = [:]
        for row in try connection.query(
            """
            SELECT t.id AS technician_id, l.technician_name, l.avatar_symbol, l.van_description
            FROM unnest(\(PostgresBinaryArray(Array(technicians)))::text[]) AS t(id)
            CROSS JOIN LATERAL (
                SELECT technician_name, avatar_symbol, van_description FROM technician_visits a
                WHERE a.technician_id = t.id ORDER BY a.assigned_position DESC LIMIT 1) l
            """
        ).rows {
            people[try row.string("technician_id")] = Person(
                name: try row.string("technician_name"), avatarSymbol: try row.string("avatar_symbol"),
                vanDescription: try row.string("van_description"))
        }
        return people
    }
}
