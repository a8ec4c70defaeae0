import Foundation
import OutboxTestSupport
import Postgres
import TestSupport
import Testing

/// Migration 0007 renames existing start targets from visit + customer + device to visit + push-to-start
/// token (by its md5), so that a start already sent keeps blocking a second start to the same token.
@Suite(.timeLimit(.minutes(5))) struct StartTargetMigrationTests {
    @Test func existingStartsMoveToTheirDevicesCurrentToken() async throws {
        let url = try await TestDatabase.createEmpty()
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 2)) { pool in
            // The schema as it was before 0007.
            try await TestDatabase.migrate(before: "0007", pool: pool)

            try await pool.withConnection { c in
                try c.execute(
                    script: """
                        INSERT INTO push_to_start_tokens (customer_id, device_id, push_token, environment, registered_at_ms)
                        VALUES ('c-1', 'd-1', 'aabbccdd00112233', 'sandbox', 1000);
                        """)
                for (target, kind, device) in [
                    ("start[\"v-1\",\"c-1\",\"d-1\"]", "start", "d-1"),  // its device has a token
                    ("start[\"v-1\",\"c-1\",\"d-9\"]", "start", "d-9"),  // its device has none any more
                    ("activity[\"v-1\",\"a-1\"]", "update", nil as String?),
                ] {
                    try c.query(
                        """
                        INSERT INTO deliveries (apns_id, target, visit_id, customer_id, device_id, kind, priority, aps_timestamp, body,
                                                visit_version, event_recorded_at, created_at, state, next_attempt_at)
                        VALUES (gen_random_uuid(), \(target), 'v-1', 'c-1', \(device), \(kind), 10, 1, '{}', 1, 1, 1, 'sent', 1)
                        """)
                }
            }
            let report = try await Migrator(directory: TestDatabase.migrationsDirectory).migrate(pool: pool)
            #expect(report.applied.contains("0007_start_target_per_token.sql"))

            let targets = try await pool.withConnection { c in
                try c.query("SELECT target FROM deliveries ORDER BY id").map { try $0.string("target") }
            }
            let (expected, md5) = try await pool.withConnection { c in
                let row = try c.query(
                    // Since 0027 the function takes the token's look-up hash; a row from before has its md5.
                    "SELECT delivery_start_target('v-1', md5('aabbccdd00112233')) AS t, md5('aabbccdd00112233') AS m"
                )
                .first!
                return (try row.string("t"), try row.string("m"))
            }
            #expect(
                expected.hasPrefix("start[") && expected.contains("\"v-1\"") && expected.contains(md5)
                    && !expected.contains("aabbcc")
            )
            #expect(targets == [expected, "start[\"v-1\",\"c-1\",\"d-9\"]", "activity[\"v-1\",\"a-1\"]"])
        }
    }
}
