import Foundation
import LiveActivityLedger
import Outbox
import Postgres
import Synchronization
import TestSupport
import Testing

@testable import PersonalData

/// Push tokens at rest: sealed under the customer's key and found by a keyed hash, never by the token; a row
/// written before (plain, no hash) is still the same registration, and is sealed when registered again.
@Suite(.timeLimit(.minutes(1))) struct SealedPushTokensTests {
    @Test func aTokenIsSealedFoundByItsKeyedHashAndALegacyRowIsSealedOnItsNextRegistration() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let keys = PersonalDataKeys(current: try WrappingKey.temporary())
            let registry = TokenRegistry(protection: SealedPushTokens(keys: keys))
            let token = String(repeating: "ab12", count: 16)
            try await pool.withConnection { c in
                func row(_ device: String, customer: String = "c-1") throws -> (token: String, hash: String?) {
                    let row = try c.query(
                        """
                        SELECT push_token, token_hash FROM push_to_start_tokens
                        WHERE customer_id = \(customer) AND device_id = \(device)
                        """
                    ).first!
                    return (try row.string("push_token"), row["token_hash"])
                }
                // Written before tokens were sealed: plain, no hash.
                try c.query(
                    """
                    INSERT INTO push_to_start_tokens (customer_id, device_id, push_token, environment, registered_at_ms)
                    VALUES ('c-1', 'd-1', \(token), 'sandbox', 1)
                    """)
                #expect(
                    try registry.registerPushToStart(
                        customerId: "c-1", deviceId: "d-1", pushToken: token, environment: .sandbox, on: c) == .unchanged)
                let sealed = try row("d-1")
                let key = try keys.dataKey(forCustomer: "c-1", on: c)
                #expect(SealedText(sealed.token) != nil && !sealed.token.contains(token))
                #expect(sealed.hash == key.lookupHash(token) && sealed.hash?.count == 64)
                #expect(PersonalDataKeys.open(try #require(SealedText(sealed.token)), with: key) == token)

                // The same token again (in capitals, as an app may send it): unchanged, its sealed form kept.
                #expect(
                    try registry.registerPushToStart(
                        customerId: "c-1", deviceId: "d-1", pushToken: token.uppercased(), environment: .sandbox, on: c)
                        == .unchanged)
                #expect(try row("d-1") == sealed)
                // Another token rotates.
                let next = String(repeating: "cd34", count: 16)
                #expect(
                    try registry.registerPushToStart(
                        customerId: "c-1", deviceId: "d-1", pushToken: next, environment: .sandbox, on: c) == .rotated)
                #expect(try row("d-1").hash == key.lookupHash(next))
                // The hash is keyed per customer: one token of two customers gives two hashes.
                #expect(
                    try registry.registerPushToStart(
                        customerId: "c-2", deviceId: "d-1", pushToken: next, environment: .sandbox, on: c) == .new)
                #expect(try row("d-1", customer: "c-2").hash != (try row("d-1").hash))
                // A retirement names the stored form a worker claimed; a stale one changes nothing.
                #expect(
                    !(try registry.retire(
                        .pushToStart(customerId: "c-1", deviceId: "d-1"), token: sealed.token, reason: .unregistered,
                        notRegisteredAfterMs: nil, on: c)))
                #expect(
                    try registry.retire(
                        .pushToStart(customerId: "c-1", deviceId: "d-1"), token: try row("d-1").token, reason: .unregistered,
                        notRegisteredAfterMs: nil, on: c))
            }
        }
    }

    /// What reaches the real sender.
    final class Recorded: PushSender {
        let tokens = Mutex<[String]>([])
        func send(_ push: OutgoingPush) async -> PushOutcome {
            tokens.withLock { $0.append(push.deviceToken) }
            return .accepted(latency: 0)
        }
    }

    /// The worker's seam opens a batch's sealed tokens (their keys read together) just before the send; a
    /// token whose customer was erased since is not sent; a plain token (a row from before) goes as it is.
    @Test func theSenderOpensTokensJustBeforeTheSendAndAnErasedCustomersTokenIsNotSent() async throws {
        try await withTestDatabase(poolSize: 2) { _, pool in
            let keys = PersonalDataKeys(current: try WrappingKey.temporary())
            let tokens = SealedPushTokens(keys: keys)
            let a = String(repeating: "a1", count: 32)
            let b = String(repeating: "b2", count: 32)
            let legacy = String(repeating: "c3", count: 32)
            let (sealedA, sealedB) = try await pool.withConnection { c in
                (try tokens.protect(a, customerId: "c-a", on: c).stored, try tokens.protect(b, customerId: "c-b", on: c).stored)
            }
            _ = try await pool.withConnection { try PersonalDataKeys.destroy(customerId: "c-b", on: $0) }
            let recorded = Recorded()
            let sender = SealedPushSender(inner: recorded, keys: keys, pool: pool)
            func push(_ token: String) -> OutgoingPush {
                OutgoingPush(
                    deviceToken: token, environment: .sandbox, priority: .immediate, expiration: 0, apnsId: UUID().uuidString,
                    body: Array(#"{"aps":{}}"#.utf8))
            }
            let outcomes = await sender.sendAll([push(sealedA), push(sealedB), push(legacy)])
            // A batch's pushes go concurrently: which tokens went matters, not their order.
            #expect(recorded.tokens.withLock { $0 }.sorted() == [a, legacy].sorted())
            #expect(outcomes[0].failure == nil && outcomes[2].failure == nil)
            #expect(outcomes[1].failure?.reason == "customer_erased")
        }
    }
}
