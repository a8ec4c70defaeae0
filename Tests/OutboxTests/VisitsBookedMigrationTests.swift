import Foundation
import OutboxTestSupport
import Postgres
import TestSupport
import Testing

/// Migration 0040 keeps each visit's booking order in its row (`visits.booked`): rows written before it get
/// the global position of their visit's first event, and the lists' indexes order by it.
@Suite(.timeLimit(.minutes(5))) struct VisitsBookedMigrationTests {
    @Test func existingRowsGetTheirFirstEventsPosition() async throws {
        let url = try await TestDatabase.createEmpty()
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 2)) { pool in
            // The schema as it was before 0040.
            try await TestDatabase.migrate(before: "0040", pool: pool)

            let positions = try await pool.withConnection { c -> [String: Int64] in
                // Another stream first, so that no position equals its row's place by chance; v-2 is booked
                // before v-1; v-3's events are not in the log.
                try c.execute(
                    script: """
                        INSERT INTO events (stream_name, position, type, data, metadata)
                        VALUES ('technician-t-1', 1, 'noted', '{}', '{}'), ('visit-v-2', 1, 'scheduled', '{}', '{}'),
                               ('visit-v-1', 1, 'scheduled', '{}', '{}'), ('visit-v-2', 2, 'enRoute', '{}', '{}');
                        INSERT INTO visits (visit_id, customer_id, technician_id, status, ended, version, scheduled_at, state,
                                            relevance_score)
                        SELECT id, 'c-1', 't-1', 'scheduled', false, 1, 100, '{}', 0 FROM unnest(ARRAY['v-1', 'v-2', 'v-3']) AS id;
                        """)
                var out: [String: Int64] = [:]
                for row in try c.query("SELECT stream_name, global_position FROM events WHERE position = 1") {
                    out[try row.string("stream_name")] = try row.int64("global_position")
                }
                return out
            }
            let report = try await Migrator(directory: TestDatabase.migrationsDirectory).migrate(pool: pool)
            #expect(report.applied.contains("0040_visits_booked.sql"))

            let booked = try await pool.withConnection { c in
                try c.query("SELECT visit_id, booked FROM visits ORDER BY scheduled_at DESC, booked DESC").map {
                    (try $0.string("visit_id"), try $0.int64("booked"))
                }
            }
            #expect(booked.map(\.0) == ["v-1", "v-2", "v-3"])
            #expect(booked.map(\.1) == [positions["visit-v-1"]!, positions["visit-v-2"]!, 0])
            let indexes = try await pool.withConnection { c in
                try c.query("SELECT indexdef FROM pg_indexes WHERE tablename = 'visits' AND indexname = 'visits_by_schedule'")
                    .map { try $0.string("indexdef") }
            }
            #expect(indexes.count == 1 && indexes[0].contains("scheduled_at DESC, booked DESC"))
        }
    }
}
