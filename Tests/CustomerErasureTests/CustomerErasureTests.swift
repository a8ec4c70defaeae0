import APIStores
import CustomerErasure
import EventStore
import Foundation
import LiveActivityLedger
import Outbox
import PersonalData
import Postgres
import Runtime
import TestSupport
import Testing
import VisitTestSupport

/// The right to be forgotten against a real database: refused while a visit of the customer's is active
/// or when nothing is known of them; otherwise every row of theirs goes in one transaction, with an audit
/// event and nothing of any other customer touched.
@Suite(.timeLimit(.minutes(3))) struct CustomerErasureTests {
    static let ops = Caller(keyId: "0123456789abcdef", role: .ops, subject: nil)

    func erasure(_ fixtures: VisitFixtures, keys: APIKeyCache = APIKeyCache(), dataKeys: PersonalDataKeyCache = .init())
        -> CustomerErasure
    {
        CustomerErasure(
            pool: fixtures.pool, store: fixtures.handler.store, keyCache: keys, dataKeyCache: dataKeys, clock: fixtures.clock)
    }

    /// How many rows `sql` counts.
    func count(_ fixtures: VisitFixtures, _ sql: PostgresQuery) async throws -> Int {
        try await fixtures.pool.withConnection { try $0.query(sql).first?.int("n") ?? 0 }
    }

    @Test func aCustomerWithAnActiveVisitIsRefusedThenErasedOnceItEnded() async throws {
        try await VisitFixtures.withOutboxPushes { fixtures in
            _ = try await fixtures.schedule("v-1", customer: "c-1")
            _ = try await fixtures.schedule("v-2", customer: "c-2")
            let tokens = TokenRegistry(clock: fixtures.clock)
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lv-erase-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let personalData = PersonalDataKeys(
                current: try WrappingKey.generate(path: folder.appendingPathComponent("personal-data.key").path))
            let registry = APIKeyRegistry(pool: fixtures.pool)
            let customerKey = try await registry.mint(role: .customer, subject: "c-1", createdBy: nil)
            let otherKey = try await registry.mint(role: .customer, subject: "c-2", createdBy: nil)
            try await fixtures.pool.withConnection { c in
                for customer in ["c-1", "c-2"] {
                    _ = try personalData.dataKey(forCustomer: customer, on: c)
                    _ = try tokens.registerPushToStart(
                        customerId: customer, deviceId: "d-1", pushToken: String(repeating: "ab", count: 32),
                        environment: .sandbox, on: c)
                    try tokens.setPreferences(
                        customerId: customer, deviceId: "d-1", liveActivitiesEnabled: true, frequentPushesEnabled: false,
                        on: c)
                }
            }

            let refused = await #expect(throws: CustomerErasure.Refusal.self) {
                try await erasure(fixtures).erase(customerId: "c-1", by: CustomerErasureTests.ops)
            }
            #expect(refused?.code == .activeVisits)
            #expect(refused?.message == "customer c-1 has a visit that has not ended; erase them after it ends")
            #expect(try await registry.caller(presenting: customerKey.key) != nil, "nothing changed")

            try await fixtures.post("v-1", #"{"type":"cancelled","reason":"customer asked"}"#)
            let keys = APIKeyCache()
            let erased = try await erasure(fixtures, keys: keys).erase(customerId: "c-1", by: CustomerErasureTests.ops)
            #expect(erased.customerId == "c-1")
            #expect(erased.visits == 1)
            #expect(erased.revokedKeys == [customerKey.keyId])
            #expect(erased.destroyedDataKeys.count == 1)

            #expect(try await registry.caller(presenting: customerKey.key) == nil)
            #expect(try await registry.caller(presenting: otherKey.key) != nil)
            for table in ["personal_data_keys", "push_to_start_tokens", "device_preferences"] {
                let sql = PostgresQuery(sql: "SELECT count(*) AS n FROM \(table) WHERE customer_id = $1", binds: ["c-1"])
                #expect(try await count(fixtures, sql) == 0, "\(table) holds nothing of c-1")
                let other = PostgresQuery(sql: "SELECT count(*) AS n FROM \(table) WHERE customer_id = $1", binds: ["c-2"])
                #expect(try await count(fixtures, other) == 1, "\(table) still holds c-2")
            }
            let audit = try await fixtures.pool.withConnection { try EventStore.readStream("customer-c-1", on: $0) }
            #expect(audit.map(\.type) == ["customerErased"])
            #expect(audit.first?.metadata.actorRole == "ops")
            #expect(audit.first?.metadata.actorSubject == CustomerErasureTests.ops.keyId)
            #expect(audit.first?.data.contains("Alex") == false, "no personal data in the audit event")
        }
    }

    @Test func aCustomerNothingIsKnownOfIsNotFoundAndNothingIsRecorded() async throws {
        try await VisitFixtures.withOutboxPushes { fixtures in
            _ = try await fixtures.schedule("v-1", customer: "c-1")
            let refused = await #expect(throws: CustomerErasure.Refusal.self) {
                try await erasure(fixtures).erase(customerId: "c-9", by: CustomerErasureTests.ops)
            }
            #expect(refused?.code == .unknownCustomer)
            #expect(refused?.message == "customer not found")
            let audit = try await fixtures.pool.withConnection { try EventStore.readStream("customer-c-9", on: $0) }
            #expect(audit.isEmpty)
        }
    }
}
