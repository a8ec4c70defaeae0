import Foundation
import Postgres
import Runtime
import TestSupport
import Testing

@testable import Webhooks

/// Which webhooks a claim takes: per visit its first open ones in order while each is due, nothing while one
/// of its visit is still on the wire, never one whose earlier one another claim holds; a lease that ran out is
/// taken over.
@Suite(.timeLimit(.minutes(1))) struct WebhookClaimTests {
    @Test func aClaimTakesTheFirstOpenWebhooksOfEachVisitAndNothingBehindALease() async throws {
        try await withTestDatabase { _, pool in
            let clock = ManualClock(now: 1_000)
            let store = WebhookStore(pool: pool, clock: clock)
            // (visit, state, next attempt): A B on v-1; C D on v-2; E F on v-3; G on v-4; H on v-5.
            let rows: [(String, String, Double)] = [
                ("v-1", "pending", 900), ("v-1", "pending", 900),  // A, B: both go, B after A
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
            let (a, b, g, h) = (ids[0], ids[1], ids[6], ids[7])
            #expect(try await store.claim(limit: 10, leaseSeconds: 30).map(\.id) == [a, b, h])
            #expect(try await store.claim(limit: 10, leaseSeconds: 30).isEmpty, "claimed again while leased")
            clock.advance(by: 600)  // past A's, B's and H's leases (1,030), before C's and F's (2,000)
            #expect(try await store.claim(limit: 10, leaseSeconds: 30).map(\.id) == [a, b, g, h])
            #expect(try await store.claim(limit: 1, leaseSeconds: 30).isEmpty)
        }
    }

    /// A visit's run of claimed webhooks is always its first open ones: it stops before one not yet due and at
    /// `perVisit`, and a claim that finds a visit's first webhook locked by another claim takes none of the
    /// visit's (the later ones would go before it).
    @Test func aVisitsClaimIsAlwaysItsFirstOpenOnes() async throws {
        try await withTestDatabase { url, pool in
            let clock = ManualClock(now: 1_000)
            let store = WebhookStore(pool: pool, clock: clock)
            // v-1: four due, the third in backoff; v-2: three due; v-3: two due.
            let rows: [(String, Double)] = [
                ("v-1", 900), ("v-1", 900), ("v-1", 1_500), ("v-1", 900),
                ("v-2", 900), ("v-2", 900), ("v-2", 900),
                ("v-3", 900), ("v-3", 900),
            ]
            var ids: [Int64] = []
            for (visit, next) in rows {
                let inserted = try await pool.query(
                    """
                    INSERT INTO webhooks (visit_id, type, occurred_at, data, created_at, state, next_attempt_at)
                    VALUES (\(visit), 'visit.cancelled', 0, '{}', 0, 'pending', \(next)::float8) RETURNING id
                    """)
                ids.append(try inserted.rows[0].int64("id"))
            }
            // Another claim holds v-3's first webhook.
            let other = try PostgresConnection(url: url)
            try other.execute(script: "BEGIN")
            _ = try other.query("SELECT id FROM webhooks WHERE id = \(ids[7]) FOR UPDATE")
            let claimed = try await store.claim(limit: 10, perVisit: 2, leaseSeconds: 30).map(\.id)
            try other.execute(script: "ROLLBACK")
            // v-1 up to the one in backoff, v-2 up to two, v-3 nothing.
            #expect(claimed == [ids[0], ids[1], ids[4], ids[5]], "claimed \(claimed) of \(ids)")
            // The rest of v-2 waits behind its two on the wire; v-3 goes now.
            #expect(try await store.claim(limit: 10, leaseSeconds: 30).map(\.id) == [ids[7], ids[8]])
        }
    }

    /// A visit's run stops where the lease might run out before another answer: past it another worker may take
    /// the rest over and send them beside this one. They go back to pending untried, due at once.
    @Test func aVisitsRunStopsWhereItsLeaseMightRunOut() async throws {
        try await withWebhookWorld(configure: { $0.requestTimeoutSeconds = 30 }) { world in
            let created = Date().timeIntervalSince1970
            let queue = (1...3).map { n in
                (
                    ClaimedWebhook(
                        id: Int64(n), webhookId: "w-\(n)", visitId: "v-1", type: "visit.cancelled", occurredAt: 0,
                        eventPosition: nil, data: "{}", createdAt: created, attempts: 0),
                    Array("{}".utf8)
                )
            }
            let roomy = await world.worker.sendInOrder(queue, leaseEnds: Date().timeIntervalSince1970 + 120)
            #expect(roomy.map(\.tried) == [true, true, true] && roomy.allSatisfy { $0.state == .sent })
            let tight = await world.worker.sendInOrder(queue, leaseEnds: Date().timeIntervalSince1970 + 20)
            let after = Date().timeIntervalSince1970
            #expect(tight.map(\.tried) == [true, false, false], "tried: \(tight.map(\.tried))")
            #expect(tight.dropFirst().allSatisfy { $0.state == .pending && ($0.nextAttemptAt ?? .infinity) <= after })
            #expect(world.receiver.received.count == 4, "sent: the three, then the first alone")
        }
    }
}
