import Foundation
import LiveActivityLedger
import Postgres
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
}
