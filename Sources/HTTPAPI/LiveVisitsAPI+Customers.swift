import APIStores
import EventStore
import Foundation
import HTTPServer
import JSON
import PersonalData
import Postgres
import VisitProjections

extension LiveVisitsAPI {
    func addCustomerRoutes(to router: inout Router) {
        router.add(
            .delete, "/v1/customers/{id}", through: authenticated,
            LiveVisitsAPI.withCaller { _, params, caller in
                try await eraseCustomer(id: params["id"], caller: caller)
            })
    }

    /// The stream of a customer's own events (the erasure's audit record): `customer-<id>`.
    static func customerStream(_ customerId: String) -> String { "customer-" + customerId }

    /// `DELETE /v1/customers/{id}` (ops; contract §10, the right to be forgotten). In one transaction, with
    /// the customer's visit rows locked against new events: 409 `customer_has_active_visits` while one of
    /// their visits has not ended, 404 when nothing is known of the customer; otherwise the data key is
    /// destroyed (every sealed copy of their name, address and job — events, read model, outbox bodies,
    /// stored answers, backups — is unreadable from now on), their pending deliveries are cancelled, their
    /// tokens (live activities of their visits, push-to-start, notification), device preferences and API
    /// keys are deleted (the keys' revocation and the data key's destruction are announced to every
    /// process, whose caches drop them), and a `customerErased` event
    /// on `customer-<id>` records who erased them and when — no personal data in it. 204.
    func eraseCustomer(id: String?, caller: Caller) async throws -> HTTPResponse {
        try LiveVisitsAPI.requireOps(caller)
        let customerId = try RequestChecks.id(id, name: "customer")
        let environment = self.environment
        let now = environment.clock.epochSeconds()
        let (revoked, destroyed) = try await mapped {
            try await environment.pool.withTransaction { c -> ([String], [String]) in
                let visits = try c.query(
                    "SELECT visit_id, ended FROM visits WHERE customer_id = \(customerId) ORDER BY visit_id FOR UPDATE")
                if visits.rows.contains(where: { $0["ended"] == "f" }) {
                    throw APIError(
                        .customerHasActiveVisits,
                        "customer \(customerId) has a visit that has not ended; erase them after it ends")
                }
                let known =
                    try c.query(
                        """
                        SELECT EXISTS (SELECT 1 FROM personal_data_keys WHERE customer_id = \(customerId))
                            OR EXISTS (SELECT 1 FROM api_keys WHERE role = 'customer' AND subject = \(customerId))
                            OR EXISTS (SELECT 1 FROM push_to_start_tokens WHERE customer_id = \(customerId))
                            OR EXISTS (SELECT 1 FROM notification_tokens WHERE customer_id = \(customerId))
                            OR EXISTS (SELECT 1 FROM device_preferences WHERE customer_id = \(customerId)) AS known
                        """
                    ).first?["known"] == "t"
                guard known || !visits.isEmpty else { throw APIError.notFound("customer") }
                let visitIds = try visits.rows.map { try $0.string("visit_id") }
                // Announced on the erasure channel: every process's data-key cache drops it at the commit.
                let destroyed = try PersonalDataKeys.destroy(customerId: customerId, on: c)
                let results = try c.pipeline([
                    """
                    UPDATE deliveries SET state = 'cancelled', finished_at = \(now), last_reason = 'customer_erased',
                        lease_token = NULL, lease_expires_at = NULL
                    WHERE customer_id = \(customerId) AND state = 'pending'
                    """,
                    "DELETE FROM live_activities WHERE visit_id = ANY(\(visitIds)::text[])",
                    "DELETE FROM push_to_start_tokens WHERE customer_id = \(customerId)",
                    "DELETE FROM notification_tokens WHERE customer_id = \(customerId)",
                    "DELETE FROM device_preferences WHERE customer_id = \(customerId)",
                    """
                    WITH gone AS (DELETE FROM api_keys WHERE role = 'customer' AND subject = \(customerId) RETURNING key_id)
                    SELECT key_id, pg_notify(\(APIKeys.revocationChannel), key_id) FROM gone
                    """,
                ])
                let data = JSONValue.object([
                    JSONMember("schemaVersion", .number(1)),
                    JSONMember("customerId", .string(customerId)),
                    JSONMember("visits", .number(Double(visitIds.count))),
                ]).serializedString()
                try EventStore.append(
                    AppendRequest(
                        streamName: LiveVisitsAPI.customerStream(customerId),
                        events: [
                            NewEvent(
                                type: "customerErased", data: data,
                                metadata: EventMetadata(actorRole: caller.role.rawValue, actorSubject: caller.keyId))
                        ], recordedAt: Double(now)), on: c)
                return (try results[5].rows.map { try $0.string("key_id") }, destroyed)
            }
        }
        for keyId in revoked { environment.keyCache.forget(keyId) }
        for keyId in destroyed { environment.dataKeyCache.forget(keyId) }
        environment.store.eventsCommitted(count: 1)
        logger.info("customer erased", ["customer.id": customerId, "actor.key_id": caller.keyId])
        return HTTPResponse(status: 204)
    }
}
