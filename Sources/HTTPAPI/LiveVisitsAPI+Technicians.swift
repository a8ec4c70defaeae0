import APIStores
import Foundation
import HTTPServer
import JSON
import VisitProjections

extension LiveVisitsAPI {
    func addTechnicianRoutes(to router: inout Router) {
        router.add(
            .get, "/v1/technicians", through: authenticated,
            LiveVisitsAPI.withCaller { request, _, caller in
                try await technicians(request, caller: caller)
            })
    }

    /// `GET /v1/technicians?date=YYYY-MM-DD` (dispatcher, ops): the day by technician — every technician with
    /// a visit whose current arrival window starts on that UTC day (default: today), by name then id, each
    /// with those visits (ended ones too) by window start, then end, then id. Read from the technicians read
    /// model (`TechnicianReadModel`); it holds no personal field.
    func technicians(_ request: HTTPRequest, caller: Caller) async throws -> HTTPResponse {
        guard caller.role == .dispatcher || caller.role == .ops else {
            throw APIError.forbidden("the technicians' day needs a dispatcher or ops key")
        }
        let day: UTCDay
        if let text = request.queryValue("date") {
            guard let parsed = UTCDay(text) else {
                throw APIError(.invalidValue, "date: expected a UTC day as YYYY-MM-DD (1970-01-01 or later)", field: "date")
            }
            day = parsed
        } else {
            day = UTCDay(containing: environment.clock.epochSeconds())
        }
        let visits = environment.visits
        let technicians = try await mapped { try await visits.technicians(from: day.start, to: day.end) }
        return .json(body: Data(LiveVisitsAPI.dayJSON(technicians)))
    }

    /// The answer's bytes, written straight from the rows: a fleet's day is tens of thousands of visits and
    /// several megabytes, and a `JSONValue` tree of it first cost as much time again and several times its
    /// size in memory. Members in the order the contract lists them; numbers as `JSONValue` writes them.
    static func dayJSON(_ technicians: [TechnicianReadModel.Technician]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + technicians.count * 160 + technicians.reduce(0) { $0 + $1.visits.count } * 130)
        func member(_ name: StaticString, first: Bool = false) {
            if !first { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(contentsOf: "\":".utf8)
        }
        out.append(contentsOf: #"{"technicians":["#.utf8)
        for (t, technician) in technicians.enumerated() {
            if t > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "{"))
            member("id", first: true)
            JSONValue.writeString(technician.id, to: &out)
            member("name")
            JSONValue.writeString(technician.name, to: &out)
            member("avatarSymbol")
            JSONValue.writeString(technician.avatarSymbol, to: &out)
            member("vanDescription")
            JSONValue.writeString(technician.vanDescription, to: &out)
            member("visits")
            out.append(UInt8(ascii: "["))
            for (v, visit) in technician.visits.enumerated() {
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
        out.append(contentsOf: "]}".utf8)
        return out
    }
}
