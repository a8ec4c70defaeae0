import Foundation
import JSON
import Postgres
import VisitDomain

/// The technicians read model (`technician_visits` table), behind `GET /v1/technicians`: one row per visit
/// with its technician, status, current arrival window and distance, from which a day by technician is read in
/// one indexed statement. Maintained by the statement in `Projections/technicians.sql`, in the same transaction
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

    /// The technicians with a visit whose current window starts in `[from, to)` (epoch seconds), by name then
    /// id (code-point order, whatever the database's collation), each with those visits by window start, then end, then id. One statement: the window index finds
    /// the day's visits, the assignment index each technician's latest booking or reassignment.
    public static func day(from: Int64, to: Int64, on connection: PostgresConnection) throws -> [Technician] {
        let rows = try connection.query(
            """
            WITH day AS (
                SELECT visit_id, technician_id, status, window_start, window_end, kilometres_away
                FROM technician_visits WHERE window_start >= \(from) AND window_start < \(to)
            ), people AS (
                SELECT p.technician_id, l.technician_name, l.avatar_symbol, l.van_description
                FROM (SELECT DISTINCT technician_id FROM day) p
                CROSS JOIN LATERAL (
                    SELECT technician_name, avatar_symbol, van_description FROM technician_visits a
                    WHERE a.technician_id = p.technician_id ORDER BY a.assigned_position DESC LIMIT 1) l
            )
            SELECT d.visit_id, d.technician_id, d.status, d.window_start, d.window_end, d.kilometres_away,
                   p.technician_name, p.avatar_symbol, p.van_description
            FROM day d JOIN people p USING (technician_id)
            ORDER BY p.technician_name COLLATE "C", d.technician_id COLLATE "C", d.window_start, d.window_end,
                     d.visit_id COLLATE "C"
            """
        ).rows
        var technicians: [Technician] = []
        for row in rows {
            let technicianId = try row.string("technician_id")
            let visit = Visit(
                visitId: try row.string("visit_id"), status: try row.string("status"),
                windowStart: try row.int64("window_start"), windowEnd: try row.int64("window_end"),
                kilometresAway: try row.double("kilometres_away"))
            if technicians.last?.id == technicianId {
                technicians[technicians.count - 1].visits.append(visit)
            } else {
                technicians.append(
                    Technician(
                        id: technicianId, name: try row.string("technician_name"),
                        avatarSymbol: try row.string("avatar_symbol"), vanDescription: try row.string("van_description"),
                        visits: [visit]))
            }
        }
        return technicians
    }
}
