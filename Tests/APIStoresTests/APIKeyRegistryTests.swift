import APIStores
import Postgres
import TestSupport
import Testing

/// The API keys' use cases against a real database: a minted key authenticates as its role and subject,
/// only its hash is stored, a wrong secret or a revoked key is no caller, and subjects are checked.
@Suite(.timeLimit(.minutes(2))) struct APIKeyRegistryTests {
    @Test func aMintedKeyIsItsCallerUntilRevoked() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let registry = APIKeyRegistry(pool: pool)
            let minted = try await registry.mint(role: .technician, subject: "t-1", createdBy: "test")
            let caller = try await registry.caller(presenting: minted.key)
            #expect(caller == Caller(keyId: minted.keyId, role: .technician, subject: "t-1"))

            // Only the hash of the secret is stored.
            let parsed = try #require(APIKeys.parse(minted.key))
            #expect(parsed.keyId == minted.keyId)
            let stored = try await pool.withConnection { try KeyStore.live(keyId: minted.keyId, on: $0) }
            #expect(stored?.secretHash == APIKeys.sha256Hex(Array(parsed.secret.utf8)))
            #expect(stored?.secretHash != parsed.secret)

            // The same id with another secret is no one.
            let forged = "lv_\(minted.keyId)_" + String(repeating: "0", count: 48)
            #expect(try await registry.caller(presenting: forged) == nil)

            // Revocation honours the roles allowed; a revoked key is no caller and cannot go twice.
            #expect(try await registry.revoke(keyId: minted.keyId, allowedRoles: [.ops]) == false)
            #expect(try await registry.revoke(keyId: minted.keyId, allowedRoles: [.technician, .customer]))
            #expect(try await registry.caller(presenting: minted.key) == nil)
            #expect(try await registry.revoke(keyId: minted.keyId, allowedRoles: Role.allCases) == false)
        }
    }

    @Test func technicianAndCustomerKeysNeedAUsableSubject() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let registry = APIKeyRegistry(pool: pool)
            let missing = await #expect(throws: APIKeys.KeyError.self) {
                try await registry.mint(role: .customer, subject: nil, createdBy: nil)
            }
            #expect(missing?.message == "a customer key needs a subject (the customer id)")
            let control = await #expect(throws: APIKeys.KeyError.self) {
                try await registry.mint(role: .technician, subject: "t\u{7}1", createdBy: nil)
            }
            #expect(control?.message == "subject: expected 1 to 128 of A-Z a-z 0-9 . _ ~ -")
            for subject in ["Jane Doe", "a@b", String(repeating: "c", count: 129)] {
                await #expect(throws: APIKeys.KeyError.self, "\(subject)") {
                    try await registry.mint(role: .customer, subject: subject, createdBy: nil)
                }
            }
            let longest = String(repeating: "c", count: 128)
            #expect(try await registry.mint(role: .customer, subject: longest, createdBy: nil).subject == longest)
            let dispatcher = try await registry.mint(role: .dispatcher, subject: nil, createdBy: nil)
            #expect(try await registry.caller(presenting: dispatcher.key)?.role == .dispatcher)
        }
    }
}
