import Foundation
import Outbox
import OutboxTestSupport
import Postgres
import TestSupport
import Testing

/// The enqueue is planned once per connection, often on an outbox not yet analyzed (a new database, a process
/// just started); its one plan must still read what each intent touches as the outbox fills: the pending rows
/// a new delivery supersedes are found along their target, never by walking an index of every delivery.
@Suite(.timeLimit(.minutes(2))) struct EnqueuePlanTests {
    @Test func supersedingOnAFullOutboxReadsWhatItSupersedes() async throws {
        try await withOutboxFixture { f in
            try await f.registerActivity(visit: "v-1", activity: "a-1", token: token("a1"))
            let now = Int64(Date().timeIntervalSince1970)
            let outbox = f.outbox
            let (results, read) = try await f.pool.withConnection { c in
                // Planned here, on an empty outbox without statistics, and kept for the connection.
                try c.execute(script: "VACUUM ANALYZE deliveries, delivery_targets")
                _ = try outbox.enqueue([update("v-1", timestamp: now)], on: c)
                // 50,000 pending updates of other visits.
                _ = try c.query(
                    """
                    INSERT INTO deliveries (apns_id, target, visit_id, customer_id, device_id, kind, priority,
                        aps_timestamp, body, visit_version, event_recorded_at, created_at, state, next_attempt_at)
                    SELECT gen_random_uuid(), 't-' || g, 'v-' || (g + 1), 'c-' || g % 500, 'd-' || g, 'update', 5, g,
                        '{}', 1, 0, 0, 'pending', g
                    FROM generate_series(1, 50000) g
                    """)
                var results: [Outbox.EnqueueResult] = []
                var read: [Int64] = []
                for n in 1...3 {
                    let before = try pagesRead(from: ["deliveries", "delivery_targets"], on: c)
                    results.append(try outbox.enqueue([update("v-1", timestamp: now + Int64(n))], on: c))
                    read.append(try pagesRead(from: ["deliveries", "delivery_targets"], on: c) - before)
                }
                return (results, read)
            }
            #expect(results.allSatisfy { $0.created == 1 && $0.superseded == 1 }, "each supersedes the last: \(results)")
            // One new row and the one it supersedes, each probed a few times; a walk of an index of every
            // delivery reads hundreds of pages.
            #expect(read.allSatisfy { $0 < 150 }, "pages read by each enqueue: \(read)")
        }
    }
}
