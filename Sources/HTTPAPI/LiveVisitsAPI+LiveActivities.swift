import APIStores
import Foundation
import HTTPServer
import JSON
import LiveActivityLedger
import VisitCommands

extension LiveVisitsAPI {
    func addLiveActivityRoutes(to router: inout Router) {
        router.add(
            .get, "/v1/visits/{id}/live-activities", through: authenticated,
            LiveVisitsAPI.withCaller { request, params, caller in
                try await visitLiveActivities(id: params["id"], caller: caller)
            })
        router.add(
            .put, "/v1/visits/{id}/live-activities/{activityId}/state", through: idempotent,
            writing { request, params, caller in
                try reportLiveActivityState(request, visit: params["id"], activity: params["activityId"], caller: caller)
            })
    }

    /// `GET /v1/visits/{id}/live-activities` (dispatcher, ops, the visit's customer): the visit's ledger,
    /// newest first, never a token.
    func visitLiveActivities(id: String?, caller: Caller) async throws -> HTTPResponse {
        guard caller.role != .technician else {
            throw APIError.forbidden("a visit's Live Activities need a dispatcher, ops or the customer's key")
        }
        let visitId = try RequestChecks.id(id, name: "visit")
        let visits = environment.visits
        let entries = try await mapped {
            try await visits.liveActivities(visitId) {
                LiveVisitsAPI.maySee(caller, customerId: $0.customerId, technicianId: $0.technicianId)
            }
        }
        guard let entries else { throw APIError.notFound("visit") }
        func number(_ value: Int64?) -> JSONValue { value.map { .number(Double($0)) } ?? .null }
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let items: [JSONValue] = entries.map { e in
            .object([
                JSONMember("activityId", text(e.activityId)),
                JSONMember("deviceId", text(e.deviceId)),
                JSONMember("environment", text(e.environment?.rawValue)),
                JSONMember("origin", .string(e.origin.rawValue)),
                JSONMember("state", .string(e.state.rawValue)),
                JSONMember("beganAt", number(e.beganAt)),
                JSONMember("renewsAt", number(e.renewsAt)),
                JSONMember("lapsesAt", number(e.lapsesAt)),
                JSONMember("lastTimestamp", number(e.lastTimestamp)),
                JSONMember("lastAcknowledgedAt", number(e.lastAcknowledgedAt)),
                JSONMember("priority10LeftThisHour", number(e.priority10LeftThisHour.map(Int64.init))),
            ])
        }
        return .json(.object([JSONMember("liveActivities", .array(items))]))
    }

    /// `PUT /v1/visits/{id}/live-activities/{activityId}/state` (the customer): what iOS did to the activity,
    /// from `activityStateUpdates`. 204; 404 for an unknown activity; 422 for a state not in the list.
    func reportLiveActivityState(_ request: HTTPRequest, visit: String?, activity: String?, caller: Caller) throws -> Write {
        guard caller.role == .customer else { throw APIError.forbidden("only the customer's app reports Live Activity states") }
        let visitId = try RequestChecks.id(visit, name: "visit")
        let activityId = try RequestChecks.id(activity, name: "live activity")
        let body = try RequestBody(request)
        try body.allowOnly(["state"])
        let text = try body.requiredString("state", maxBytes: 32)
        guard let state = ReportedActivityState(rawValue: text) else {
            let allowed = ReportedActivityState.allCases.map(\.rawValue).joined(separator: ", ")
            throw APIError(.invalidValue, "state: expected one of \(allowed)")
        }
        return LiveVisitsAPI.deviceWrite(
            environment.devices.reportState(visitId: visitId, activityId: activityId, customerId: caller.subject, state: state))
    }
}
