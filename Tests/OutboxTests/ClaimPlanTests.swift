import Foundation
import OutboxTestSupport
import Postgres
import Testing

@testable import Outbox

/// The worker's claim is planned once per connection (planning it cost more than running it), and its one
/// plan reads what it claims, whatever the backlog and however many devices have preferences: it never walks
/// the queue's primary key nor hashes every device's preferences.
@Suite(.timeLimit(.minutes(2))) struct ClaimPlanTests {
    @Test func aClaimFromABigBacklogIsPlannedOnceAndReadsWhatItTakes() async throws {
        try await withOutboxFixture { f in
            let (claims, fetched, plans) = try await f.pool.withConnection { c in
                _ = try c.query(
                    """
                    INSERT INTO deliveries (apns_id, target, visit_id, customer_id, device_id, kind, priority,
                        aps_timestamp, body, visit_version, event_recorded_at, created_at, state, next_attempt_at)
                    SELECT gen_random_uuid(), 't-' || g, 'v-' || g, 'c-' || g % 500, 'd-' || g, 'update', 5, g, '{}', 1,
                        0, 0, 'pending', g
                    FROM generate_series(1, 40000) g
                    """)
                _ = try c.query(
                    """
                    INSERT INTO device_preferences (customer_id, device_id, live_activities_enabled,
                        frequent_pushes_enabled, updated_at_ms)
                    SELECT 'c-' || g % 500, 'd-' || g, true, false, 0 FROM generate_series(1, 20000) g
                    """)
                _ = try c.query("ANALYZE deliveries")
                _ = try c.query("ANALYZE device_preferences")
                var claims: [[Int64]] = []
                var fetched: [Int64] = []
                for n in 0..<3 {
                    // In a transaction of its own, so that what it fetched is counted for it alone.
                    _ = try c.query("BEGIN")
                    let lease = UUID().uuidString.lowercased()
                    claims.append(
                        try OutboxStore.claim(limit: 20, lease: lease, leaseSeconds: 30, now: 50_000 + Double(n), on: c)
                            .map(\.id))
                    fetched.append(
                        try c.query(
                            """
                            SELECT pg_stat_get_xact_tuples_fetched('deliveries'::regclass)
                                 + pg_stat_get_xact_tuples_fetched('device_preferences'::regclass) AS n
                            """
                        ).rows[0].int64("n"))
                    _ = try c.query("COMMIT")
                }
                let plans = try c.query(
                    """
                    SELECT generic_plans, custom_plans FROM pg_prepared_statements
                    WHERE statement LIKE '%WITH candidates AS%' AND statement NOT LIKE '%pg_prepared_statements%'
                    """
                ).rows.map { [try $0.int64("generic_plans"), try $0.int64("custom_plans")] }
                return (claims, fetched, plans)
            }
            let expected = try await f.pool.withConnection { c in
                try c.query("SELECT id FROM deliveries ORDER BY next_attempt_at LIMIT 60").rows.map { try $0.int64("id") }
            }
            #expect(claims.flatMap { $0 } == expected, "each claim takes the next 20 due, in order")
            #expect(plans == [[3, 0]], "one generic plan, no custom one: \(plans)")
            // 20 rows claimed, each probed a few times; a walk of the primary key or a hash of the preferences
            // fetches tens of thousands.
            #expect(fetched.allSatisfy { $0 < 1_000 }, "rows fetched by each claim: \(fetched)")
        }
    }
}
