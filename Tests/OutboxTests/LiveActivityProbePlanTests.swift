import Outbox
import OutboxTestSupport
import Postgres
import TestSupport
import Testing

/// A visit's probe of its live activities (`visit_id = … AND retired_at_ms IS NULL`) is one descent of the
/// ledger's primary key, led by the visit, whatever the ledger held when the statement was planned: the
/// index of live activities by when they began (the lapse pass's) once satisfied the probe too, and a plan
/// made once on a small ledger walked all of it for every visit.
@Suite(.timeLimit(.minutes(2))) struct LiveActivityProbePlanTests {
    @Test func aVisitsFollowersPlannedOnAnEmptyLedgerReadItsOwnRows() async throws {
        try await withOutboxFixture { f in
            let (followers, read) = try await f.pool.withConnection { c in
                // Planned here, on an empty ledger, and kept for the connection (`VisitFollowers` is planned once).
                try c.execute(script: "VACUUM ANALYZE live_activities, channels")
                _ = try VisitFollowers.of(["v-0"], on: c)
                // 3,000 live activities, one per visit, begun one a second.
                _ = try c.query(
                    """
                    INSERT INTO live_activities (visit_id, activity_id, device_id, push_token, environment,
                        registered_at_ms, began_at_ms)
                    SELECT 'v-' || g, 'a-' || g, 'd-' || g, 'token-' || g, 'sandbox', g * 1000, g * 1000
                    FROM generate_series(1, 3000) g
                    """)
                var read: [Int64] = []
                var followers: [Int] = []
                for visit in ["v-7", "v-1500", "v-3001"] {
                    let before = try rowsAndEntriesRead(from: ["live_activities", "channels"], on: c)
                    followers.append(try VisitFollowers.of([visit], on: c)[0].liveActivities)
                    read.append(try rowsAndEntriesRead(from: ["live_activities", "channels"], on: c) - before)
                }
                return (followers, read)
            }
            #expect(followers == [1, 1, 0], "each visit's own live activities: \(followers)")
            // A descent per visit reads its one row and entry; a walk of the live activities reads 3,000.
            #expect(read.allSatisfy { $0 < 20 }, "rows and index entries read per probe: \(read)")
        }
    }
}
