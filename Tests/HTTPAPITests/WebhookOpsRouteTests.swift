import Foundation
import Postgres
import Testing
import Webhooks

/// Webhooks in the operators' outbox: listed with kind `webhook` among the deliveries, and a dead one
/// requeued by `POST /v1/ops/outbox/{id}/retry` with its body's `id` kept.
@Suite(.timeLimit(.minutes(2))) struct WebhookOpsRouteTests {
    @Test func aDeadWebhookIsListedAndRetried() async throws {
        try await withAPIServer { api in
            try await WebhookStore(pool: api.pool).setEnabled(true)
            let visit = uniqueID("v")
            #expect(try await api.schedule(visit, customer: "c-1").status == 201)
            let rows = try await WebhookStore(pool: api.pool).list()
            let webhook = try #require(rows.first)
            #expect(rows.count == 1 && webhook.type == "visit.event" && webhook.visitId == visit)
            _ = try await api.pool.query("UPDATE webhooks SET state = 'dead', finished_at = 1, last_status = 500")

            let dead = try await api.call("GET", "/v1/ops/outbox?state=dead", key: api.ops)
            #expect(dead.status == 200)
            let listed = try #require((dead.json?["deliveries"] as? [[String: Any]])?.first)
            #expect(listed["kind"] as? String == "webhook" && listed["state"] as? String == "dead")
            #expect(listed["id"] as? Int == Int(webhook.id) && listed["webhookId"] as? String == webhook.webhookId)
            #expect(listed["type"] as? String == "visit.event" && listed["lastStatus"] as? Int == 500)

            let retried = try await api.call("POST", "/v1/ops/outbox/\(webhook.id)/retry", key: api.ops)
            #expect(retried.status == 200)
            #expect(retried.json?["state"] as? String == "pending" && retried.json?["kind"] as? String == "webhook")
            #expect(retried.json?["webhookId"] as? String == webhook.webhookId)
            let again = try await api.call("POST", "/v1/ops/outbox/\(webhook.id)/retry", key: api.ops)
            #expect(again.status == 409)
            #expect(try await api.call("POST", "/v1/ops/outbox/999999/retry", key: api.ops).status == 404)
            #expect(try await api.call("GET", "/v1/ops/outbox?state=dead", key: api.dispatcher).status == 403)
        }
    }
}
