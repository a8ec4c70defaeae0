import APIStores
import Foundation
import HTTPServer
import JSON
import Outbox
import VisitProjections

/// `PUT /v1/visits/{id}/channel` (contract §7): the visit's broadcast channel in one APNs environment,
/// created on the first call (the creation claimed in the database before APNs is called: `ChannelStore`)
/// and the same id for every later or concurrent call from any process.
extension LiveVisitsAPI {
    func addChannelRoutes(to router: inout Router) {
        router.add(
            .put, "/v1/visits/{id}/channel", through: authenticated,
            LiveVisitsAPI.withCaller { request, params, caller in
                try await putChannel(request, id: params["id"], caller: caller)
            })
    }

    func putChannel(_ request: HTTPRequest, id: String?, caller: Caller) async throws -> HTTPResponse {
        guard caller.role != .technician else {
            throw APIError.forbidden("a technician key may not ask for a visit's channel")
        }
        let visitId = try RequestChecks.id(id, name: "visit")
        let body = try RequestBody(request)
        try body.allowOnly(["environment"])
        let pushEnvironment = try LiveVisitsAPI.environment(body)
        let environment = self.environment
        let visits = environment.visits
        let row = try await mapped { try await visits.row(visitId) }
        guard let row, LiveVisitsAPI.maySee(caller, customerId: row.customerId, technicianId: row.technicianId) else {
            throw APIError.notFound("visit")
        }
        guard !row.ended else { throw APIError(.visitEnded, "the visit has ended (\(row.status)): it has no channel") }
        guard let service = environment.channelService else {
            throw APIError(.apnsUnavailable, "channels need APNs: sending is not configured on this server")
        }
        let channelId = try await mapped {
            try await environment.channels.channel(
                visitId: visitId, customerId: row.customerId, environment: pushEnvironment, service: service)
        }
        environment.batcher.handler.states.targetsRegistered(visits: [visitId])
        let answer = JSONValue.object([
            JSONMember("channelId", .string(channelId)), JSONMember("environment", .string(pushEnvironment.rawValue)),
        ])
        return .json(body: Data(answer.serializedString().utf8))
    }
}
