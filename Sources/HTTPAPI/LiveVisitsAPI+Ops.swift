import APIStores
import Foundation
import HTTPServer
import JSON
import Outbox
import VisitProjections
import Webhooks

extension LiveVisitsAPI {
    func addOpsRoutes(to router: inout Router) {
        router.add(
            .get, "/v1/ops/outbox", through: authenticated,
            LiveVisitsAPI.withCaller { request, _, caller in
                try await listOutbox(request, caller: caller)
            })
        router.add(
            .get, "/v1/ops/outbox/pause", through: authenticated,
            LiveVisitsAPI.withCaller { _, _, caller in
                try await sendingPause(caller: caller)
            })
        router.add(
            .post, "/v1/ops/outbox/{id}/retry", through: authenticated,
            LiveVisitsAPI.withCaller { _, params, caller in
                try await retryDelivery(id: params["id"], caller: caller)
            })
        router.add(
            .post, "/v1/ops/projections/{name}/rebuild", through: authenticated,
            LiveVisitsAPI.withCaller { _, params, caller in
                try await rebuild(name: params["name"], caller: caller)
            })
    }

    static func requireOps(_ caller: Caller) throws {
        guard caller.role == .ops else { throw APIError.forbidden("operations need an ops key") }
    }

    func listOutbox(_ request: HTTPRequest, caller: Caller) async throws -> HTTPResponse {
        try LiveVisitsAPI.requireOps(caller)
        var state: DeliveryState? = nil
        if let text = request.queryValue("state") {
            guard let parsed = DeliveryState(rawValue: text) else {
                throw APIError(
                    .invalidValue, "state: expected one of \(DeliveryState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            state = parsed
        }
        var limit = 100
        if let text = request.queryValue("limit") {
            guard let n = Int(text), (1...1000).contains(n) else { throw APIError(.invalidValue, "limit: expected 1 to 1000") }
            limit = n
        }
        let deliveries = try await mapped { try await environment.outboxStore.list(state: state, limit: limit) }
        let webhooks = try await mapped {
            try await WebhookStore(pool: environment.pool, clock: environment.clock).list(state: state, limit: limit)
        }
        // Deliveries and webhooks share one numbering: the newest of both, by id.
        let rows =
            deliveries.map { ($0.id, LiveVisitsAPI.deliveryJSON($0)) } + webhooks.map { ($0.id, LiveVisitsAPI.webhookJSON($0)) }
        let items = rows.sorted { $0.0 > $1.0 }.prefix(limit).map(\.1)
        return .json(body: Data("{\"deliveries\":[\(items.joined(separator: ","))]}".utf8))
    }

    /// `GET /v1/ops/outbox/pause`: whether a configuration error from APNs paused sending, until when and why.
    func sendingPause(caller: Caller) async throws -> HTTPResponse {
        try LiveVisitsAPI.requireOps(caller)
        let view = environment.sendingPause
        let now = environment.clock.now()
        let pause = try await mapped { try await view.current(now: now) }
        let body: JSONValue =
            if let pause {
                .object([
                    JSONMember("paused", .bool(true)), JSONMember("since", .number(pause.since.rounded(.down))),
                    JSONMember("until", .number(pause.until.rounded(.up))), JSONMember("reason", .string(pause.reason)),
                ])
            } else {
                .object([
                    JSONMember("paused", .bool(false)), JSONMember("since", .null), JSONMember("until", .null),
                    JSONMember("reason", .null),
                ])
            }
        return .json(body)
    }

    func retryDelivery(id: String?, caller: Caller) async throws -> HTTPResponse {
        try LiveVisitsAPI.requireOps(caller)
        guard let id, let deliveryId = Int64(id) else { throw APIError.notFound("delivery") }
        let store = environment.outboxStore
        let webhooks = WebhookStore(pool: environment.pool, clock: environment.clock)
        let body = try await mapped { () async throws -> String in
            do {
                return LiveVisitsAPI.deliveryJSON(try await store.retry(id: deliveryId))
            } catch let error as OutboxError where error.code == .notFound {
                return LiveVisitsAPI.webhookJSON(try await webhooks.retry(id: deliveryId))
            }
        }
        environment.pushes.committed()
        return .json(body: Data(body.utf8))
    }

    func rebuild(name: String?, caller: Caller) async throws -> HTTPResponse {
        try LiveVisitsAPI.requireOps(caller)
        guard let name, let projection = VisitReplay.Projection.named(name) else { throw APIError.notFound("projection") }
        // A rebuild outlasts the request pool's work timeout: it gets connections of its own, unbounded.
        let readModel = environment.readModel
        let report = try await mapped {
            try await VisitReplay.rebuild(readModel, projection: projection, likePool: environment.pool)
        }
        let body =
            "{\"projection\":\"\(projection.name)\",\"events\":\(report.events),\"visits\":\(report.visits),"
            + "\"carriedOver\":\(report.carriedOver),\"seconds\":\(String(format: "%.3f", report.seconds))}"
        return .json(body: Data(body.utf8))
    }

    /// A webhook in the outbox list: the delivery fields that have no meaning for it are `null`; `webhookId` is
    /// the body's `id`, `type` what it reports.
    static func webhookJSON(_ w: Webhook) -> String {
        func opt<T>(_ v: T?, _ f: (T) -> String) -> String { v.map(f) ?? "null" }
        return "{\"id\":\(w.id),\"apnsId\":null,\"visitId\":\(jsonString(w.visitId)),\"customerId\":null,"
            + "\"activityId\":null,\"deviceId\":null,\"kind\":\"webhook\",\"state\":\"\(w.state.rawValue)\","
            + "\"priority\":null,\"apsTimestamp\":null,\"visitVersion\":null,\"webhookId\":\(jsonString(w.webhookId)),"
            + "\"type\":\(jsonString(w.type)),\"attempts\":\(w.attempts),\"createdAt\":\(Int64(w.createdAt)),"
            + "\"nextAttemptAt\":\(Int64(w.nextAttemptAt)),\"finishedAt\":\(opt(w.finishedAt) { String(Int64($0)) }),"
            + "\"lastStatus\":\(opt(w.lastStatus) { String($0) }),\"lastReason\":\(opt(w.lastReason, jsonString))}"
    }

    /// An outbox row for operators: never the push token.
    static func deliveryJSON(_ d: OutboxDelivery) -> String {
        func opt<T>(_ v: T?, _ f: (T) -> String) -> String { v.map(f) ?? "null" }
        return "{\"id\":\(d.id),\"apnsId\":\(jsonString(d.apnsId)),\"visitId\":\(jsonString(d.visitId)),"
            + "\"customerId\":\(jsonString(d.customerId)),\"activityId\":\(opt(d.activityId, jsonString)),"
            + "\"deviceId\":\(opt(d.deviceId, jsonString)),\"kind\":\"\(d.kind.rawValue)\",\"state\":\"\(d.state.rawValue)\","
            + "\"priority\":\(d.priority),\"apsTimestamp\":\(d.apsTimestamp),\"visitVersion\":\(d.visitVersion),"
            + "\"attempts\":\(d.attempts),\"createdAt\":\(Int64(d.createdAt)),\"nextAttemptAt\":\(Int64(d.nextAttemptAt)),"
            + "\"finishedAt\":\(opt(d.finishedAt) { String(Int64($0)) }),\"lastStatus\":\(opt(d.lastStatus) { String($0) }),"
            + "\"lastReason\":\(opt(d.lastReason, jsonString))}"
    }
}
