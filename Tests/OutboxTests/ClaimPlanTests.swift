import Foundation
import OutboxTestSupport
import Postgres
import TestSupport
import Testing

@testable import Outbox

/// The worker's claim is planned once per connection (planning it cost more than running it), and its one
/// plan reads what it claims, whatever the backlog and however many devices have preferences: it never walks
/// the queue's primary key, hashes every device's preferences, nor reads every paced update waiting.
@Suite(.timeLimit(.minutes(2))) struct ClaimPlanTests {
    @Test func aClaimFromABigBacklogIsPlannedOnceAndReadsWhatItTakes() async throws {
        try await withOutboxFixture { f in
            let run = try await f.pool.withConnection { c in
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
                return try Self.claimThrice(on: c, from: 50_000)
            }
            // Expected here, in the test's task: the connection's closure runs on the pool's thread.
            run.expectTheNextDueTakenReadingLittle()
        }
    }

    /// Beside a fleet most pending rows are paced updates not yet due (their target sent one within its
    /// interval). The claim holds back the few due too early; it must read those, not every paced row waiting
    /// (its generic plan once hashed the whole paced index at every claim).
    @Test func pacedUpdatesWaitingAreNotReadByEveryClaim() async throws {
        try await withOutboxFixture { f in
            let run = try await f.pool.withConnection { c in
                try Self.insertPacedUpdates(on: c)
                return try Self.claimThrice(on: c, from: 10_060)
            }
            // Expected here, in the test's task: the connection's closure runs on the pool's thread.
            run.expectTheNextDueTakenReadingLittle()
        }
    }

    /// Planned while few paced updates waited (a fleet's morning; statistics taken a moment before), the claim
    /// must still hold back the paced updates due too early by reading those alone: its one plan once walked
    /// every pending paced row at every claim to find them by id, and a plan made on a smaller outbox joined
    /// each of them to every target's row.
    @Test func aClaimPlannedBesideFewPacedUpdatesReadsOnlyThoseDue() async throws {
        try await withOutboxFixture { f in
            let run = try await f.pool.withConnection { c in
                // Planned here, beside 40,000 pushes sent and 20 paced updates waiting, and kept for the connection.
                _ = try c.query(
                    """
                    INSERT INTO deliveries (apns_id, target, visit_id, customer_id, device_id, kind, priority,
                        aps_timestamp, body, visit_version, event_recorded_at, created_at, state, next_attempt_at,
                        finished_at, paced_seconds)
                    SELECT gen_random_uuid(), CASE WHEN g <= 20 THEN 'u-' ELSE 's-' END || g, 'w-' || g, 'c-' || g % 500,
                        'e-' || g, 'update', 5, g, '{}', 1, 0, 0, CASE WHEN g <= 20 THEN 'pending' ELSE 'sent' END,
                        900000 + g, CASE WHEN g > 20 THEN 1 END, 60
                    FROM generate_series(1, 40020) g
                    """)
                try c.execute(script: "VACUUM ANALYZE deliveries, device_preferences, delivery_targets")
                let lease = UUID().uuidString.lowercased()
                _ = try OutboxStore.claim(limit: 20, lease: lease, leaseSeconds: 30, now: 0, on: c)
                try Self.insertPacedUpdates(on: c)
                // Not analyzed: statistics would have the plan made again.
                return try Self.claimThrice(on: c, from: 10_060, analyzing: false)
            }
            // Expected here, in the test's task: the connection's closure runs on the pool's thread.
            run.expectTheNextDueTakenReadingLittle(plannedBefore: 1)
        }
    }

    /// What three claims did: the ids each took, the 60 due first before them, the rows and index entries
    /// each read, and the claim's plans (`[generic, custom]` per prepared statement).
    struct ClaimRun {
        var claims: [[Int64]]
        var expected: [Int64]
        var read: [Int64]
        var plans: [[Int64]]

        /// Each claim took the next 20 due, in order; the claim has one generic plan and no custom one; each
        /// read under 1,000 rows and index entries: 20 rows claimed, each probed a few times (a walk of the
        /// primary key, a hash of the preferences or of the paced rows reads tens of thousands).
        /// `plannedBefore`: claims the connection made before these three.
        func expectTheNextDueTakenReadingLittle(plannedBefore: Int64 = 0, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(
                claims.flatMap { $0 } == expected, "each claim takes the next 20 due, in order", sourceLocation: sourceLocation)
            #expect(
                plans == [[3 + plannedBefore, 0]], "one generic plan, no custom one: \(plans)", sourceLocation: sourceLocation)
            #expect(read.allSatisfy { $0 < 1_000 }, "rows read by each claim: \(read)", sourceLocation: sourceLocation)
        }
    }

    /// 4,000 paced updates, one per target, due one a second from 10,000; their targets last sent a paced
    /// update at 0, so the 60 due by 10,060 are due for good and go.
    static func insertPacedUpdates(on c: PostgresConnection) throws {
        _ = try c.query(
            """
            INSERT INTO deliveries (apns_id, target, visit_id, customer_id, device_id, kind, priority,
                aps_timestamp, body, visit_version, event_recorded_at, created_at, state, next_attempt_at,
                paced_seconds)
            SELECT gen_random_uuid(), 't-' || g, 'v-' || g, 'c-' || g % 500, 'd-' || g, 'update', 5, g, '{}', 1,
                0, 0, 'pending', 10000 + g, 60
            FROM generate_series(1, 4000) g
            """)
        _ = try c.query(
            """
            INSERT INTO delivery_targets (target, last_sent_timestamp, last_paced_at)
            SELECT 't-' || g, 0, 0 FROM generate_series(1, 4000) g
            """)
    }

    /// Analyzes the tables (unless told not to), then claims 20 three times, at `now`, `now + 1` and `now + 2`.
    static func claimThrice(on c: PostgresConnection, from now: Double, analyzing: Bool = true) throws -> ClaimRun {
        if analyzing { _ = try c.query("ANALYZE deliveries, device_preferences, delivery_targets") }
        let expected = try c.query("SELECT id FROM deliveries ORDER BY next_attempt_at LIMIT 60").rows.map {
            try $0.int64("id")
        }
        func rowsRead() throws -> Int64 {
            try rowsAndEntriesRead(from: ["deliveries", "device_preferences", "delivery_targets"], on: c)
        }
        var claims: [[Int64]] = []
        var read: [Int64] = []
        for n in 0..<3 {
            let before = try rowsRead()
            let lease = UUID().uuidString.lowercased()
            claims.append(
                try OutboxStore.claim(limit: 20, lease: lease, leaseSeconds: 30, now: now + Double(n), on: c).map(\.id))
            read.append(try rowsRead() - before)
        }
        let plans = try c.query(
            """
            SELECT generic_plans, custom_plans FROM pg_prepared_statements
            WHERE statement LIKE '%WITH candidates AS%' AND statement NOT LIKE '%pg_prepared_statements%'
            """
        ).rows.map { [try $0.int64("generic_plans"), try $0.int64("custom_plans")] }
        return ClaimRun(claims: claims, expected: expected, read: read, plans: plans)
    }
}
