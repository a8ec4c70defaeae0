import Foundation
import Postgres
import Runtime
import TestSupport
import Testing

@testable import Webhooks

/// Which webhooks a claim takes: per visit only the first open one, and not while a later one of its visit is
/// still on the wire; a lease that ran out is taken over.
@Suite(.timeLimit(.minutes(1))) struct WebhookClaimTests {
    @Test func aClaimTakesTheFirstOpenWebhookOfEachVisitAndNothingBehindALease() async throws {
        try await withTestDatabase { _, pool in
            let clock = ManualClock(now: 1_000)
            let store = WebhookStore(pool: pool, clock: clock)
            // (visit, state, next attempt): A B on v-1; C D on v-2; E F on v-3; G on v-4; H on v-5.
            let rows: [(String, String, Double)] = [
                ("v-1", "pending", 900), ("v-1", "pending", 900),  // A, B: B waits behind A
                ("v-2", "sending", 2_000), ("v-2", "pending", 900),  // C on the wire, D behind it
                ("v-3", "pending", 900), ("v-3", "sending", 2_000),  // E requeued while F, later, is on the wire
                ("v-4", "pending", 1_500),  // G not due yet
                ("v-5", "sending", 900),  // H: its lease ran out
            ]
            var ids: [Int64] = []
            for (visit, state, next) in rows {
                let inserted = try await pool.query(
                    """
                    INSERT INTO webhooks (visit_id, type, occurred_at, data, created_at, state, next_attempt_at)
                    VALUES (\(visit), 'visit.cancelled', 0, '{}', 0, \(state), \(next)::float8) RETURNING id
                    """)
                ids.append(try inserted.rows[0].int64("id"))
            }
            let (a, g, h) = (ids[0], ids[6], ids[7])
            #expect(try await store.claim(limit: 10, leaseSeconds: 30).map(\.id) == [a, h])
            #expect(try await store.claim(limit: 10, leaseSeconds: 30).isEmpty, "claimed again while leased")
            clock.advance(by: 600)  // past A's and H's leases (1,030), before C's and F's (2,000)
            #expect(try await store.claim(limit: 10, leaseSeconds: 30).map(\.id) == [a, g, h])
            #expect(try await store.claim(limit: 1, leaseSeconds: 30).isEmpty)
        }
    }
}
