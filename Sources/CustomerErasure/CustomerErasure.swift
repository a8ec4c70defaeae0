import APIStores
import EventStore
import JSON
import PersonalData
import Postgres
import Runtime

/// The right to be forgotten (contract §10): a customer erased in one transaction, with their visit rows
/// locked against new events.
///
/// Refused while one of their visits has not ended (`Refusal.Code.activeVisits`), and when nothing is known
/// of the customer (`Refusal.Code.unknownCustomer`). Otherwise their data key is destroyed — every sealed
/// copy of their name, address and job (events, read model, outbox bodies, stored answers, backups) is
/// unreadable from then on — their pending deliveries are cancelled, their tokens (the live activities of
/// their visits, push-to-start, notification), device preferences and API keys are deleted, and a
/// `customerErased` event on `customer-<id>` records who erased them and when, with no personal data in it.
/// The keys' revocation and the data key's destruction are announced to every process, whose caches drop
/// them; this process's caches drop them when the transaction has committed.
///
/// Its own target: it writes the tables of the read model, the outbox, the personal data, the API keys and
/// the event store, and no other target depends on all of them.
public struct CustomerErasure: Sendable {
    public let pool: PostgresPool
    public let store: EventStore
    public let keyCache: APIKeyCache
    public let dataKeyCache: PersonalDataKeyCache
    public let clock: any WallClock

    public init(
        pool: PostgresPool, store: EventStore, keyCache: APIKeyCache, dataKeyCache: PersonalDataKeyCache,
        clock: any WallClock
    ) {
        self.pool = pool
        self.store = store
        self.keyCache = keyCache
        self.dataKeyCache = dataKeyCache
        self.clock = clock
    }

    /// What an erasure did.
    public struct Erased: Sendable, Equatable {
        public let customerId: String
        /// How many of the customer's visits (all ended) lost their live activities.
        public let visits: Int
        /// The customer's API keys, deleted.
        public let revokedKeys: [String]
        /// The customer's data keys, destroyed.
        public let destroyedDataKeys: [String]
    }

    /// Why a customer was not erased; nothing was changed.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public struct Code: Sendable, Hashable {
            private enum Kind: Sendable, Hashable { case activeVisits, unknownCustomer }
            private let kind: Kind
            /// A visit of the customer's has not ended.
            public static let activeVisits = Code(kind: .activeVisits)
            /// Nothing is known of the customer: no visit, data key, token, preference or key.
            public static let unknownCustomer = Code(kind: .unknownCustomer)
        }

        public let code: Code
        public let message: String
        public var description: String { message }
    }

    /// The stream of a customer's own events (the erasure's audit record): `customer-<id>`.
    public static func stream(of customerId: String) -> String { "customer-" + customerId }

    /// Erases the customer; `caller` is who asked (their role and key id are recorded on the event).
    public func erase(customerId: String, by caller: Caller) async throws -> Erased {
        let actor = EventMetadata(actorRole: caller.role.rawValue, actorSubject: caller.keyId, actorName: caller.name)
        let now = clock.epochSeconds()
        let erased = try await pool.withTransaction { c -> Erased in
            let visits = try c.query(
                "SELECT visit_id, ended FROM visits WHERE customer_id = \(customerId) ORDER BY visit_id FOR UPDATE")
            if visits.rows.contains(where: { $0["ended"] == "f" }) {
                throw Refusal(
                    code: .activeVisits,
                    message: "customer \(customerId) has a visit that has not ended; erase them after it ends")
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
            guard known || !visits.isEmpty else {
                throw Refusal(code: .unknownCustomer, message: "customer not found")
            }
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
                    streamName: CustomerErasure.stream(of: customerId),
                    events: [NewEvent(type: "customerErased", data: data, metadata: actor)], recordedAt: Double(now)),
                on: c)
            return Erased(
                customerId: customerId, visits: visitIds.count,
                revokedKeys: try results[5].rows.map { try $0.string("key_id") }, destroyedDataKeys: destroyed)
        }
        for keyId in erased.revokedKeys { keyCache.forget(keyId) }
        for keyId in erased.destroyedDataKeys { dataKeyCache.forget(keyId) }
        store.eventsCommitted(count: 1)
        return erased
    }
}
