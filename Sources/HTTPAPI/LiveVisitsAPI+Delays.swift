import APIStores
import Foundation
import HTTPServer
import JSON
import VisitCommands
import VisitDomain

extension LiveVisitsAPI {
    func addDelayRoutes(to router: inout Router) {
        router.add(
            .post, "/v1/technicians/{id}/delay", through: idempotent,
            writing { request, params, caller in
                try delayTechnician(request, id: params["id"], caller: caller)
            })
    }

    /// `POST /v1/technicians/{id}/delay` (dispatcher): the technician is running late. One `progress` moving
    /// the arrival window by `minutes` on each of their visits not reached yet, all in one transaction (with an
    /// `Idempotency-Key`, the answer is kept in it too); 200 `{"visits": [{"visitId", "version"}]}`, the visits
    /// moved in id order, an empty list when there is none. A visit written concurrently makes the whole run
    /// again on the new states (`retryOnConflict`), so neither write is lost.
    func delayTechnician(_ request: HTTPRequest, id: String?, caller: Caller) throws -> Write {
        guard caller.role == .dispatcher else {
            throw APIError.forbidden("only a dispatcher posts that a technician is running late")
        }
        let technicianId = try RequestChecks.id(id, name: "technician")
        let delay = try TechnicianDelay.parse(Array(request.body))
        let context = VisitCommandContext(
            actorRole: caller.role.rawValue, actorSubject: caller.subject ?? caller.keyId, correlationId: request.id)
        let step = environment.commands.delay(technicianId: technicianId, by: delay, context: context)
        return Write(retryOnConflict: true, IdempotentTransactions.work(step) { LiveVisitsAPI.delayAnswer($0) })
    }

    /// The delay's 200: each visit moved and the version its `progress` made.
    static func delayAnswer(_ results: [VisitCommandResult]) -> Answer {
        let visits: [JSONValue] = results.map { result in
            .object([
                JSONMember("visitId", .string(result.state.visitId)),
                JSONMember("version", .number(Double(result.state.version))),
            ])
        }
        return Answer(
            status: 200, body: JSONValue.object([JSONMember("visits", .array(visits))]).serializedString(),
            eventsAppended: results.reduce(0) { $0 + $1.appended.globalPositions.count },
            enqueuedPushes: results.contains { $0.pushes > 0 })
    }
}
