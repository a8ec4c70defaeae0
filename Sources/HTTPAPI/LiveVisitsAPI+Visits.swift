import APIStores
import Foundation
import HTTPServer
import Outbox
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections

extension LiveVisitsAPI {
    func addVisitRoutes(to router: inout Router) {
        router.add(
            .post, "/v1/visits", through: idempotent,
            writing { request, _, caller in
                try scheduleVisit(request, caller: caller)
            })
        router.add(
            .get, "/v1/visits", through: authenticated,
            LiveVisitsAPI.withCaller { request, _, caller in
                try await listVisits(request, caller: caller)
            })
        router.add(
            .get, "/v1/visits/{id}", through: authenticated,
            LiveVisitsAPI.withCaller { request, params, caller in
                try await getVisit(id: params["id"], caller: caller)
            })
        router.add(
            .post, "/v1/visits/{id}/events", through: idempotent,
            writing { request, params, caller in
                try postEvent(request, id: params["id"], caller: caller)
            })
        router.add(
            .get, "/v1/visits/{id}/events", through: authenticated,
            LiveVisitsAPI.withCaller { request, params, caller in
                try await visitHistory(id: params["id"], caller: caller)
            })
        router.add(
            .get, "/v1/visits/{id}/deliveries", through: authenticated,
            LiveVisitsAPI.withCaller { request, params, caller in
                try await visitDeliveries(request, id: params["id"], caller: caller)
            })
    }

    // MARK: visibility

    /// Whether the caller may see where a visit's work happens (its `location`, the customer's personal data):
    /// dispatchers and ops only.
    static func maySeeLocation(_ caller: Caller) -> Bool {
        caller.role == .dispatcher || caller.role == .ops
    }

    /// Whether the caller may see a visit (a technician only theirs, a customer only theirs).
    static func maySee(_ caller: Caller, customerId: String, technicianId: String) -> Bool {
        switch caller.role {
        case .dispatcher, .ops: true
        case .technician: caller.subject == technicianId
        case .customer: caller.subject == customerId
        }
    }

    /// A visit command as a write, through group commit with or without a key: with one, its answer is
    /// stored under the key by a statement of the command's own pipeline (`IdempotencyStore`); a command the
    /// batch refuses, or whose key is already taken, is answered by the idempotency transaction instead
    /// (`work`, alone). Each answers 201 with the visit after it (GET shape, ETag); the count of live
    /// activities is read in the command's round trip.
    static func commandWrite(_ command: VisitCommand, retryOnConflict: Bool, environment: APIEnvironment) -> Write {
        Write(
            retryOnConflict: retryOnConflict,
            unkeyed: { try answer(try await environment.batcher.execute(command)) },
            keyed: { claim in
                var keyed = command
                // The stored answer is composed by the statement itself, followers included.
                keyed.withFollowers = false
                keyed.alsoRun = { view in
                    [
                        IdempotencyStore.storeVisitAnswerStatement(
                            claim.scope, requestBody: claim.body, visitId: command.visitId, view: view)
                    ]
                }
                keyed.refuseIfAnyRow = IdempotencyStore.takenStatement(claim.scope)
                return try keyedAnswer(try await environment.batcher.execute(keyed))
            },
            IdempotentTransactions.work(environment.commands.step(command)) { try answer($0) }
        )
    }

    /// A command's result without what its answer is made of: the server's fault, answered as the contract's
    /// generic error.
    struct MissingAnswer: Error, CustomStringConvertible {
        let detail: String
        var description: String { detail }
    }

    /// The answer a batched keyed command stored (and so gives): the row its claim statement returned.
    private static func keyedAnswer(_ result: VisitCommandResult) throws -> Answer {
        guard let row = result.alsoRows.first?.first, let body = row["response_body"] else {
            throw MissingAnswer(detail: "the idempotency claim returned no answer")
        }
        return answer(result, body: body, etag: row["response_etag"])
    }

    /// The command, asking for what its answer needs besides the visit (who follows it).
    static func visitCommand(
        _ event: VisitEvent, visitId: String, context: VisitCommandContext, isCreation: Bool, environment: APIEnvironment
    ) -> VisitCommand {
        VisitCommand(
            visitId: visitId, event: event, context: context, isCreation: isCreation, withFollowers: true)
    }

    private static func answer(_ result: VisitCommandResult) throws -> Answer {
        guard let followers = result.followers else {
            throw MissingAnswer(detail: "the command's answer came without its visit's followers")
        }
        return answer(
            result,
            body: VisitReadModel.body(
                view: result.view, liveActivities: followers.liveActivities, channels: channels(followers)),
            etag: "\"\(result.state.version)\"")
    }

    /// The visit's channels as its answer lists them.
    static func channels(_ followers: VisitFollowers) -> [VisitReadModel.Channel] {
        followers.channels.map { VisitReadModel.Channel(channelId: $0.channelId, environment: $0.environment) }
    }

    /// A command's 201 with the body and ETag it gives, and what it left for the followers and workers.
    private static func answer(_ result: VisitCommandResult, body: String, etag: String?) -> Answer {
        Answer(
            status: 201, body: body, etag: etag,
            eventsAppended: result.appended.globalPositions.count, enqueuedPushes: result.pushes > 0)
    }

    // MARK: handlers

    func scheduleVisit(_ request: HTTPRequest, caller: Caller) throws -> Write {
        guard caller.role == .dispatcher else { throw APIError.forbidden("only a dispatcher schedules visits") }
        let scheduled = try ScheduleVisitRequest.parse(Array(request.body)) { "v-" + UUID().uuidString.lowercased() }
        let context = VisitCommandContext(
            actorRole: caller.role.rawValue, actorSubject: caller.subject ?? caller.keyId, actorName: caller.name,
            correlationId: request.id)
        let command = LiveVisitsAPI.visitCommand(
            .scheduled(scheduled), visitId: scheduled.attributes.visitId, context: context, isCreation: true,
            environment: environment)
        return LiveVisitsAPI.commandWrite(command, retryOnConflict: true, environment: environment)
    }

    func postEvent(_ request: HTTPRequest, id: String?, caller: Caller) throws -> Write {
        let environment = self.environment
        let visitId = try RequestChecks.id(id, name: "visit")
        guard caller.role == .dispatcher || caller.role == .technician else {
            throw APIError.forbidden("a \(caller.role.rawValue) key may not post visit events")
        }
        let expected = try RequestChecks.ifMatch(request.headers["if-match"])
        let event = try VisitEventRequest.parse(Array(request.body))
        if caller.role == .technician && !event.type.technicianMayPost {
            throw APIError.forbidden("\(event.type.rawValue) is the dispatcher's to post")
        }
        let context = VisitCommandContext(
            actorRole: caller.role.rawValue, actorSubject: caller.subject ?? caller.keyId, actorName: caller.name,
            correlationId: request.id, expectedVersion: expected,
            authorize: { state in
                guard LiveVisitsAPI.maySee(caller, customerId: state.customerId, technicianId: state.technician.id) else {
                    throw APIError.notFound("visit")
                }
            })
        let command = LiveVisitsAPI.visitCommand(
            event, visitId: visitId, context: context, isCreation: false, environment: environment)
        return LiveVisitsAPI.commandWrite(command, retryOnConflict: expected == nil, environment: environment)
    }

    func getVisit(id: String?, caller: Caller) async throws -> HTTPResponse {
        let visitId = try RequestChecks.id(id, name: "visit")
        let visits = environment.visits
        let found = try await mapped {
            try await visits.visit(visitId) {
                LiveVisitsAPI.maySee(caller, customerId: $0.customerId, technicianId: $0.technicianId)
            }
        }
        guard let (row, followers) = found else { throw APIError.notFound("visit") }
        return Answer(
            status: 200,
            body: row.body(
                liveActivities: followers.liveActivities, channels: LiveVisitsAPI.channels(followers),
                showingLocation: LiveVisitsAPI.maySeeLocation(caller)),
            etag: "\"\(row.version)\""
        ).response
    }

    func visitHistory(id: String?, caller: Caller) async throws -> HTTPResponse {
        let visitId = try RequestChecks.id(id, name: "visit")
        let visits = environment.visits
        let history = try await mapped {
            try await visits.history(visitId, showingLocation: LiveVisitsAPI.maySeeLocation(caller)) {
                LiveVisitsAPI.maySee(caller, customerId: $0.customerId, technicianId: $0.technicianId)
            }
        }
        guard let history else { throw APIError.notFound("visit") }
        return .json(body: Data(history.serializedString().utf8))
    }

    func listVisits(_ request: HTTPRequest, caller: Caller) async throws -> HTTPResponse {
        var filter = VisitReadModel.ListFilter()
        filter.customerId = request.queryValue("customerId")
        filter.technicianId = request.queryValue("technicianId")
        switch request.queryValue("status") {
        case nil: break
        case "active": filter.ended = false
        case "ended": filter.ended = true
        default: throw APIError(.invalidValue, "status: expected active or ended")
        }
        if let limit = request.queryValue("limit") {
            guard let n = Int(limit), (1...200).contains(n) else { throw APIError(.invalidValue, "limit: expected 1 to 200") }
            filter.limit = n
        }
        if let cursor = request.queryValue("cursor") {
            guard let decoded = LiveVisitsAPI.decodeCursor(cursor) else {
                throw APIError.malformed("cursor is not one this server gave")
            }
            filter.after = decoded
        }
        // Role scoping: filters only narrow what the caller may see.
        var empty = false
        switch caller.role {
        case .dispatcher, .ops: break
        case .technician:
            if let asked = filter.technicianId, asked != caller.subject { empty = true }
            filter.technicianId = caller.subject
        case .customer:
            if let asked = filter.customerId, asked != caller.subject { empty = true }
            filter.customerId = caller.subject
        }
        let visits = environment.visits
        let page = filter
        let visible = !empty
        // The same page asked again while one is being read waits for the next read and shares it (a hundred
        // consoles polling the same board): the answer is the same for whoever asks, and its sealed fields are
        // opened once, by the read.
        let response = try await mapped {
            try await environment.visitLists.value(VisitListAsk(filter: page, visible: visible)) {
                let (rows, followers) = try await visits.page(page, visible: visible)
                let shown = rows.prefix(page.limit)
                var items: [String] = []
                for (row, followed) in zip(shown, followers) {
                    items.append(row.body(liveActivities: followed.liveActivities, channels: LiveVisitsAPI.channels(followed)))
                }
                let next =
                    rows.count > page.limit ? shown.last.map { LiveVisitsAPI.encodeCursor($0.scheduledAt, $0.booked) } : nil
                let nextJSON = next.map { JSONValue.string($0).serializedString() } ?? "null"
                let body = "{\"visits\":[\(items.joined(separator: ","))],\"nextCursor\":\(nextJSON)}"
                return await openPersonalData(.json(body: Data(body.utf8)))
            }
        }
        LiveVisitsAPI.currentCaller?.markAnswerOpened()
        return response
    }

    /// The cursor after a row: its scheduled time and booking order (`VisitReadModel.Row.booked`).
    static func encodeCursor(_ scheduledAt: Int64, _ booked: Int64) -> String {
        Base64URL.encode(Array("\(scheduledAt):\(booked)".utf8))
    }

    static func decodeCursor(_ cursor: String) -> (scheduledAt: Int64, booked: Int64)? {
        guard cursor.count <= 400, let bytes = Base64URL.decode(cursor), let plain = String(validating: bytes, as: UTF8.self),
            let colon = plain.firstIndex(of: ":"), let at = Int64(plain[..<colon]),
            let booked = Int64(plain[plain.index(after: colon)...])
        else { return nil }
        return (at, booked)
    }
}
