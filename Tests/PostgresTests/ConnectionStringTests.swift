import TestSupport
import Testing

@testable import Postgres

/// The connection string the product opens: `connect_timeout` and JIT off added, what the URL says itself kept.
@Suite(.timeLimit(.minutes(1))) struct ConnectionStringTests {
    @Test func theProductsSessionsRunWithoutJITEvenPastItsCostThreshold() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let plan = try await pool.withConnection { c -> String in
                #expect(try c.query("SHOW jit").rows[0].string("jit") == "off")
                // With the threshold at 0 every plan would be compiled, were JIT on.
                return try c.transaction { t in
                    _ = try t.query("SELECT set_config('jit_above_cost', '0', true)")
                    return try t.query("EXPLAIN (ANALYZE, COSTS OFF) SELECT sum(g) FROM generate_series(1, 1000) g").rows
                        .map { try $0.string("QUERY PLAN") }.joined(separator: "\n")
                }
            }
            #expect(!plan.contains("JIT"), "plan: \(plan)")
        }
    }

    @Test func optionsAndATimeoutTheURLGivesAreKept() async throws {
        try await withTestDatabase(poolSize: 1) { url, _ in
            let own = url + (url.contains("?") ? "&" : "?") + "options=-c%20work_mem%3D5MB"
            try await PostgresPool.withPool(PostgresConfiguration(url: own, size: 1)) { pool in
                let row = try await pool.query(
                    "SELECT current_setting('work_mem') AS w, (SELECT source FROM pg_settings WHERE name = 'jit') AS j"
                ).rows[0]
                #expect(try row.string("w") == "5MB")
                #expect(try row.string("j") != "client", "the URL's own options replace ours")
            }
        }
    }

    @Test func bothFormsOfConnectionStringGetTheTimeoutAndTheOption() {
        #expect(
            PostgresConnection.connectionString("postgres://u@h/db", connectTimeoutSeconds: 5)
                == "postgres://u@h/db?connect_timeout=5&options=-c%20jit%3Doff")
        #expect(
            PostgresConnection.connectionString("postgresql://h/db?sslmode=disable&connect_timeout=2", connectTimeoutSeconds: 5)
                == "postgresql://h/db?sslmode=disable&connect_timeout=2&options=-c%20jit%3Doff")
        #expect(
            PostgresConnection.connectionString("host=h dbname=db", connectTimeoutSeconds: 3)
                == "host=h dbname=db connect_timeout=3 options='-c jit=off'")
    }
}
