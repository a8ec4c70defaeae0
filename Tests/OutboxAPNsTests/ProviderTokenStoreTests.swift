import APNs
import Foundation
import Outbox
import OutboxAPNs
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

    @Test func compareAndSetKeepsOneToken() async throws {
        try await withTestDatabase { _, pool async throws in
            let store = PostgresProviderTokenStore(pool: pool, teamId: "TEAM", keyId: "KEY")
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
            #expect(try await PostgresProviderTokenStore(pool: pool, teamId: "TEAM", keyId: "OTHER").load() == nil)
        }
    }

    @Test func twoProcessesPresentTheSameToken() async throws {
        try await withTestDatabase { _, pool async throws in
            let key = try ProviderTokenStoreTests.signingKey()
            let signer = ProviderTokenSigner(key: key, keyId: "ABC123DEFG", teamId: "TEAM123456")
            let clock = ManualClock(now: Date().timeIntervalSince1970)
            // Two sources stand for two worker processes: separate pools, one database.
            let first = ProviderTokenSource(
                signer: signer, store: PostgresProviderTokenStore(pool: pool, teamId: "TEAM123456", keyId: "ABC123DEFG"),
                clock: clock
            )
            let secondPool = PostgresPool(url: pool.configuration.url, size: 2)
            let second = ProviderTokenSource(
                signer: signer, store: PostgresProviderTokenStore(pool: secondPool, teamId: "TEAM123456", keyId: "ABC123DEFG"),
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
}
