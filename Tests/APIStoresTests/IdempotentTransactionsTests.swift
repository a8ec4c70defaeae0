import APIStores
import Postgres
import TestSupport
import Testing

/// A write's transaction with its Idempotency-Key: the first outcome is kept under the key with the
/// write, a retry finds the key taken, a refusal is kept without what the write did, and an error that is
/// no refusal leaves neither the write nor the key.
@Suite(.timeLimit(.minutes(2))) struct IdempotentTransactionsTests {
    struct Refused: Error {}
    struct Broken: Error {}

    static func claim(_ key: String) -> IdempotencyClaim {
        IdempotencyClaim(scope: IdempotencyScope(keyId: "k-1", route: "POST /v1/test", key: key), body: "sha256:body")
    }

    /// The work: a key row named `keyId`, then `failure` thrown if any.
    static func insert(_ keyId: String, failing failure: (any Error & Sendable)? = nil) -> TransactionWork<String> {
        { c in
            try KeyStore.insert(keyId: keyId, secretHash: "h", role: "ops", subject: nil, createdBy: nil, on: c)
            if let failure { throw failure }
            return keyId
        }
    }

    static let refusal: @Sendable (any Error) -> String? = { $0 is Refused ? "refused" : nil }
    static let stored: @Sendable (String) -> StoredAnswer = { StoredAnswer(status: 201, body: $0, etag: nil) }

    func live(_ pool: PostgresPool, _ keyId: String) async throws -> Bool {
        try await pool.withConnection { try KeyStore.live(keyId: keyId, on: $0) != nil }
    }

    func record(_ pool: PostgresPool, _ claim: IdempotencyClaim) async throws -> IdempotencyRecord? {
        try await pool.withConnection { try IdempotencyStore.find(claim.scope, on: $0) }
    }

    @Test func theFirstOutcomeIsKeptWithTheWriteAndARetryFindsTheKeyTaken() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let transactions = IdempotentTransactions(pool: pool)
            let claim = IdempotentTransactionsTests.claim("first")
            let outcome = try await transactions.run(
                claim: claim, IdempotentTransactionsTests.insert("a"), refusal: IdempotentTransactionsTests.refusal,
                stored: IdempotentTransactionsTests.stored)
            #expect(outcome == "a")
            #expect(try await live(pool, "a"))
            #expect(try await record(pool, claim)?.answer == StoredAnswer(status: 201, body: "a", etag: nil))

            let taken = await #expect(throws: IdempotencyClaim.Taken.self) {
                try await transactions.run(
                    claim: claim, IdempotentTransactionsTests.insert("b"), refusal: IdempotentTransactionsTests.refusal,
                    stored: IdempotentTransactionsTests.stored)
            }
            #expect(taken?.record?.answer?.body == "a")
            #expect(try await live(pool, "b") == false, "the retry wrote nothing")
        }
    }

    @Test func aRefusalIsKeptWithoutTheWriteAndAnotherErrorKeepsNothing() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let transactions = IdempotentTransactions(pool: pool)
            let refusedClaim = IdempotentTransactionsTests.claim("refused")
            let outcome = try await transactions.run(
                claim: refusedClaim, IdempotentTransactionsTests.insert("r", failing: Refused()),
                refusal: IdempotentTransactionsTests.refusal, stored: IdempotentTransactionsTests.stored)
            #expect(outcome == "refused")
            #expect(try await live(pool, "r") == false, "rolled back to the savepoint")
            #expect(try await record(pool, refusedClaim)?.answer?.body == "refused")

            let brokenClaim = IdempotentTransactionsTests.claim("broken")
            await #expect(throws: Broken.self) {
                try await transactions.run(
                    claim: brokenClaim, IdempotentTransactionsTests.insert("x", failing: Broken()),
                    refusal: IdempotentTransactionsTests.refusal, stored: IdempotentTransactionsTests.stored)
            }
            #expect(try await live(pool, "x") == false)
            #expect(try await record(pool, brokenClaim) == nil, "the key is free again")

            // Without a claim: the work alone, its error as it is.
            #expect(
                try await transactions.run(
                    claim: nil, IdempotentTransactionsTests.insert("n"), refusal: IdempotentTransactionsTests.refusal,
                    stored: IdempotentTransactionsTests.stored) == "n")
            #expect(try await live(pool, "n"))
        }
    }
}
