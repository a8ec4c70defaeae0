import LiveActivityLedger
import Postgres
import Runtime
import TestSupport
import Testing

/// How PostgreSQL plans a registration: once per connection, whatever the holder and the values.
@Suite(.timeLimit(.minutes(1))) struct RegistrationPlanTests {
    /// Each kind of token's registration is one prepared statement on a connection, made once and run with
    /// its generic plan: left to PostgreSQL's choice it was planned again at nearly every call (its custom
    /// plan looked cheaper than the generic one), planning costing twice what the statement did.
    @Test func aRegistrationIsPlannedOncePerConnection() async throws {
        let tokens = TokenRegistry(clock: ManualClock(now: 1_790_000_000))
        try await withTestDatabase { _, pool in
            let plans = try await pool.withConnection { c in
                for n in 1...8 {
                    let token = String(repeating: String(format: "%02x", n), count: 32)
                    try tokens.registerLiveActivity(
                        visitId: "v-\(n)", activityId: "a-\(n)", pushToken: token, environment: .sandbox, on: c)
                    try tokens.registerPushToStart(
                        customerId: "c-\(n)", deviceId: "d-\(n)", pushToken: token, environment: .sandbox, on: c)
                }
                return try c.query(
                    """
                    SELECT generic_plans, custom_plans FROM pg_prepared_statements
                    WHERE statement LIKE '%WITH previous AS%' AND statement NOT LIKE '%pg_prepared_statements%'
                    ORDER BY statement
                    """
                ).rows.map { [try $0.int64("generic_plans"), try $0.int64("custom_plans")] }
            }
            #expect(plans == [[8, 0], [8, 0]], "[generic, custom] plans of each kind's registration: \(plans)")
        }
    }
}
