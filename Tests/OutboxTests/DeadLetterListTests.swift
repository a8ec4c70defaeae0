import Foundation
import OutboxTestSupport
import Postgres
import Testing

@testable import Outbox

/// The ops page's dead letters (`GET /v1/ops/outbox?state=dead`, asked every 2 seconds per open page) are read
/// through the partial index on the rare states, never by walking every push the outbox keeps.
@Suite(.timeLimit(.minutes(2))) struct DeadLetterListTests {
    @Test func theDeadAndExpiredAreReadByTheirIndexNewestFirst() async throws {
        try await withOutboxFixture { f in
            let ids = try await f.pool.withConnection { c -> (dead: [Int64], expired: [Int64]) in
                _ = try c.query(
                    """
                    INSERT INTO deliveries (apns_id, target, visit_id, customer_id, kind, priority, aps_timestamp, body,
                        visit_version, event_recorded_at, created_at, state, next_attempt_at)
                    SELECT gen_random_uuid(), 't-' || g % 100, 'v-' || g, 'c-1', 'update', 5, g, '{}', 1, 0, 0,
                        CASE WHEN g % 5000 = 17 THEN 'dead' WHEN g % 5000 = 18 THEN 'expired' ELSE 'sent' END, 0
                    FROM generate_series(1, 20000) g
                    """)
                _ = try c.query("ANALYZE deliveries")
                let dead = try c.query("SELECT id FROM deliveries WHERE state = 'dead' ORDER BY id DESC").rows.map {
                    try $0.int64("id")
                }
                let expired = try c.query("SELECT id FROM deliveries WHERE state = 'expired' ORDER BY id DESC").rows.map {
                    try $0.int64("id")
                }
                return (dead, expired)
            }
            #expect(ids.dead.count == 4 && ids.expired.count == 4)
            #expect(try await f.store.list(state: .dead, limit: 3).map(\.id) == Array(ids.dead.prefix(3)))
            #expect(try await f.store.list(state: .expired).map(\.id) == ids.expired)
            #expect(try await f.store.list(limit: 2).map(\.state) == [.sent, .sent])

            for state in [DeliveryState.dead, .expired] {
                let statement = OutboxStore.listStatement(state: state, limit: 100)
                let plan = try await f.pool.withConnection { c in
                    try c.query(PostgresQuery(sql: "EXPLAIN (COSTS OFF) " + statement.sql, binds: statement.binds)).rows
                        .map { try $0.string("QUERY PLAN") }.joined(separator: "\n")
                }
                #expect(plan.contains("deliveries_dead_letters"), "\(state): \(plan)")
            }
        }
    }
}
