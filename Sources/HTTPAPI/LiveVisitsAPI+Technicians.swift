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
        let body = try await mapped { try await visits.technicianDay(from: day.start, to: day.end) }
        // Nothing to open: the technicians read model keeps no customer's field, and a fleet's day is
        // megabytes that the way out would otherwise scan for sealed values at every ask.
        LiveVisitsAPI.currentCaller?.markAnswerOpened()
        return .json(body: body)
    }
}
