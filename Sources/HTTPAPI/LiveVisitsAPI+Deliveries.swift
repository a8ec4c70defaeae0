import APIStores
import Foundation
import HTTPServer
import JSON
import VisitProjections

extension LiveVisitsAPI {
    /// `GET /v1/visits/{id}/deliveries` (dispatcher, ops; contract §11 and §13): the visit's pushes, newest
    /// first, each with its target's id, its APNs ids and what it carries for the Live Activity (its
    /// `aps.timestamp`, content state, stale and dismissal dates: what a device shows once it is acknowledged,
    /// the console's preview), never a token.
    func visitDeliveries(_ request: HTTPRequest, id: String?, caller: Caller) async throws -> HTTPResponse {
        guard caller.role == .dispatcher || caller.role == .ops else {
            throw APIError.forbidden("a visit's deliveries need a dispatcher or ops key")
        }
        let visitId = try RequestChecks.id(id, name: "visit")
        var limit = 100
        if let text = request.queryValue("limit") {
            guard let n = Int(text), (1...1000).contains(n) else { throw APIError(.invalidValue, "limit: expected 1 to 1000") }
            limit = n
        }
        let deliveries = environment.deliveries
        let pageLimit = limit
        guard let rows = try await mapped({ try await deliveries.list(visitId: visitId, limit: pageLimit) }) else {
            throw APIError.notFound("visit")
        }
        let items: [JSONValue] = rows.map { d in
            .object([
                JSONMember("id", .number(Double(d.id))),
                JSONMember("kind", .string(d.kind)),
                JSONMember("target", .string(d.target)),
                JSONMember("priority", .number(Double(d.priority))),
                JSONMember("state", .string(d.state)),
                JSONMember("attempts", .number(Double(d.attempts))),
                JSONMember("lastStatus", d.lastStatus.map { .number(Double($0)) } ?? .null),
                JSONMember("lastReason", d.lastReason.map(JSONValue.string) ?? .null),
                JSONMember("createdAt", .number(Double(Int64(d.createdAt)))),
                JSONMember("sentAt", d.sentAt.map { .number(Double(Int64($0))) } ?? .null),
                JSONMember("activityId", d.activityId.map(JSONValue.string) ?? .null),
                JSONMember("deviceId", d.deviceId.map(JSONValue.string) ?? .null),
                JSONMember("channelId", d.channelId.map(JSONValue.string) ?? .null),
                JSONMember("apnsId", .string(d.apnsId)),
                JSONMember("apnsUniqueId", d.apnsUniqueId.map(JSONValue.string) ?? .null),
                JSONMember("timestamp", .number(Double(d.timestamp))),
                JSONMember("contentState", d.contentState.flatMap { try? JSONValue.parse($0) } ?? .null),
                JSONMember("staleDate", d.staleDate.map { .number(Double($0)) } ?? .null),
                JSONMember("dismissalDate", d.dismissalDate.map { .number(Double($0)) } ?? .null),
            ])
        }
        return .json(.object([JSONMember("deliveries", .array(items))]))
    }
}
