import APIStores
import Foundation
import HTTPServer
import VisitCommands
import VisitDomain

extension LiveVisitsAPI {
    func addLocationRoutes(to router: inout Router) {
        router.add(
            .post, "/v1/technicians/{id}/location", through: authenticated,
            LiveVisitsAPI.withCaller { request, params, caller in
                try await postLocation(request, id: params["id"], caller: caller)
            })
    }

    /// `POST /v1/technicians/{id}/location` (that technician, or a dispatcher): one fix, 202 with whether it
    /// was accepted and the events it appended (`{"accepted", "events": [{"visitId","version","type",
    /// "kilometresAway"}]}`), appended as that technician. The coordinates are not kept.
    func postLocation(_ request: HTTPRequest, id: String?, caller: Caller) async throws -> HTTPResponse {
        let technicianId = try RequestChecks.id(id, name: "technician")
        switch caller.role {
        case .dispatcher: break
        case .technician where caller.subject == technicianId: break
        case .technician: throw APIError.forbidden("a technician posts only their own location")
        case .customer, .ops: throw APIError.forbidden("a \(caller.role.rawValue) key may not post a technician's location")
        }
        let fix: TechnicianFix
        do { fix = try TechnicianFix.parse(Array(request.body)) } catch { throw APIError.input(error) }
        let locations = environment.locations
        let outcome = try await mapped {
            try await locations.accept(fix, technicianId: technicianId, correlationId: request.id)
        }
        let events: [JSONValue] = outcome.appended.map { result in
            .object([
                JSONMember("visitId", .string(result.state.visitId)),
                JSONMember("version", .number(Double(result.state.version))),
                JSONMember("type", .string(result.state.lastEventType.rawValue)),
                JSONMember("kilometresAway", .number(result.state.kilometresAway)),
            ])
        }
        var members = [JSONMember("accepted", .bool(outcome.refusal == nil))]
        if let refusal = outcome.refusal { members.append(JSONMember("ignored", .string(refusal.rawValue))) }
        members.append(JSONMember("events", .array(events)))
        return .json(status: 202, .object(members))
    }
}
