import APNs
import Foundation
import Outbox
import OutboxAPNs
import PersonalData
import Postgres
import Runtime
import TestSupport
import Testing

/// The fleet shares one APNs provider token through PostgreSQL.
@Suite(.timeLimit(.minutes(5))) struct ProviderTokenStoreTests {
    static func signingKey() throws -> APNsSigningKey {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ptk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let key = dir.appendingPathComponent("key.p8").path
        let made = try Subprocess.runBlocking(
            "/bin/sh", ["-c", "openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out '\(key)'"])
        #expect(made.status == 0)
        return try APNsSigningKey(contentsOfFile: key)
    }

    static let sealingKey = SealingKey(bytes: Array(repeating: 7, count: 32))

    @Test func compareAndSetKeepsOneToken() async throws {
        try await withTestDatabase { _, pool async throws in
            let store = PostgresProviderTokenStore(pool: pool, teamId: "TEAM", keyId: "KEY", sealingKey: Self.sealingKey)
            #expect(try await store.load() == nil)
            let a = ProviderToken(jwt: "a.b.c", issuedAt: 100)
            let b = ProviderToken(jwt: "d.e.f", issuedAt: 101)
            #expect(try await store.compareAndSet(expected: nil, new: a) == a)
            // A second process that also saw "nothing stored" loses and adopts the winner.
            #expect(try await store.compareAndSet(expected: nil, new: b) == a)
            // Replacing needs the current token.
            let c = ProviderToken(jwt: "g.h.i", issuedAt: 2000)
            #expect(try await store.compareAndSet(expected: b, new: c) == a)
            #expect(try await store.compareAndSet(expected: a, new: c) == c)
            #expect(try await store.load() == c)
            // Another key has its own row.
            #expect(
                try await PostgresProviderTokenStore(pool: pool, teamId: "TEAM", keyId: "OTHER", sealingKey: Self.sealingKey)
                    .load() == nil)
        }
    }

    @Test func twoProcessesPresentTheSameToken() async throws {
        try await withTestDatabase { _, pool async throws in
            let key = try ProviderTokenStoreTests.signingKey()
            let signer = ProviderTokenSigner(key: key, keyId: "ABC123DEFG", teamId: "TEAM123456")
            let clock = ManualClock(now: Date().timeIntervalSince1970)
            // Two sources stand for two worker processes: separate pools, one database.
            let first = ProviderTokenSource(
                signer: signer, store: try PostgresProviderTokenStore(pool: pool, signer: signer),
                clock: clock
            )
            let secondPool = PostgresPool(url: pool.configuration.url, size: 2)
            let second = ProviderTokenSource(
                signer: signer, store: try PostgresProviderTokenStore(pool: secondPool, signer: signer),
                clock: clock)
            let one = try await first.token()
            clock.advance(by: 1)
            let two = try await second.token()
            #expect(one == two, "the second process minted its own token instead of adopting the fleet's")
            // Past the refresh age both move to one new token.
            clock.advance(by: 55 * 60)
            let three = try await second.token()
            let four = try await first.token()
            #expect(three.issuedAt > one.issuedAt)
            #expect(three == four)
        }
    }

    /// The JWT is a bearer secret: the row holds it sealed under a key only holders of the `.p8` derive, and a
    /// process with another `.p8` (same key id) neither reads it nor stays stuck behind it.
    @Test func theStoredTokenIsSealedUnderTheSigningKey() async throws {
        try await withTestDatabase { _, pool async throws in
            let signer = ProviderTokenSigner(key: try Self.signingKey(), keyId: "ABC123DEFG", teamId: "TEAM123456")
            let store = try PostgresProviderTokenStore(pool: pool, signer: signer)
            let token = try signer.mint(issuedAt: 1_000)
            #expect(try await store.compareAndSet(expected: nil, new: token) == token)
            let stored = try await pool.withConnection { c in
                try c.query("SELECT * FROM apns_provider_tokens").rows.map { row in
                    row.values.map { $0 ?? "" }.joined(separator: " ")
                }
            }
            #expect(stored.count == 1)
            let signature = String(token.jwt.split(separator: ".").last!)
            #expect(!stored[0].contains(signature), "the JWT's signature is in the row")
            #expect(!stored[0].contains(token.jwt))
            #expect(try await store.load() == token)

            let otherSigner = ProviderTokenSigner(key: try Self.signingKey(), keyId: "ABC123DEFG", teamId: "TEAM123456")
            let other = try PostgresProviderTokenStore(pool: pool, signer: otherSigner)
            #expect(try await other.load() == nil, "another key file opens the token")
            let mine = try otherSigner.mint(issuedAt: 1_001)
            #expect(try await other.compareAndSet(expected: nil, new: mine) == mine)
            #expect(try await other.load() == mine)
        }
    }
}
