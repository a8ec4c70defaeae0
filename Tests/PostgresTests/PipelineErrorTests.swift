import TestSupport
import Testing

@testable import Postgres

/// A statement that fails inside a pipeline: its error comes back typed (code, SQLSTATE, constraint),
/// nothing of the pipeline stands, and the connection goes on serving, in and out of pipeline mode.
@Suite(.timeLimit(.minutes(1))) struct PipelineErrorTests {
    static func failing(prepared: Bool) async throws {
        let url = try await TestDatabase.createMigrated()
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1, usePreparedStatements: prepared)) { pool in
            try await pool.withConnection { c in
                try c.execute(script: "CREATE TABLE t (n int CONSTRAINT t_pkey PRIMARY KEY, d int CHECK (d <> 0))")
            }
            @Sendable func insert(_ n: Int, _ d: Int = 1) -> PostgresQuery { "INSERT INTO t VALUES (\(n), \(d))" }

            // A unique violation in the middle: typed, with its constraint; the first insert is undone.
            let unique = try await pool.withConnection { c -> PostgresError? in
                try c.execute(script: "INSERT INTO t VALUES (1, 1)")
                do {
                    try c.pipeline([insert(2), insert(1), insert(3)])
                    return nil
                } catch let error as PostgresError {
                    return error
                }
            }
            #expect(unique?.code == .uniqueViolation)
            #expect(unique?.sqlState == "23505")
            #expect(unique?.constraint == "t_pkey")
            #expect(unique?.isUnavailable == false)

            // A run-time error (division by zero) and a check violation: `.query` with PostgreSQL's code.
            let (divide, check) = try await pool.withConnection { c -> (PostgresError?, PostgresError?) in
                var errors: [PostgresError?] = []
                for statements: [PostgresQuery] in [
                    [insert(4), "SELECT 1 / \(0)::int AS n", insert(5)], [insert(6), insert(7, 0)],
                ] {
                    do {
                        try c.pipeline(statements)
                        errors.append(nil)
                    } catch let error as PostgresError {
                        errors.append(error)
                    }
                }
                return (errors[0], errors[1])
            }
            #expect(divide?.code == .query)
            #expect(divide?.sqlState == "22012")
            #expect(check?.code == .query)
            #expect(check?.sqlState == "23514")

            // The same connection (the pool has one) is healthy, out of any transaction, and serves both a
            // plain query and a pipeline; only the row inserted outside the pipelines is there.
            let (healthy, inTransaction, rows, again) = try await pool.withConnection { c -> (Bool, Bool, [Int], [String]) in
                let rows = try c.query("SELECT n FROM t ORDER BY n").rows.map { try $0.int("n") }
                let again = try c.pipeline([insert(8), "SELECT count(*) AS n FROM t"]).last!.rows.map { try $0.string("n") }
                return (c.isHealthy, c.inTransaction, rows, again)
            }
            #expect(healthy)
            #expect(!inTransaction)
            #expect(rows == [1])
            #expect(again == ["2"])
        }
    }

    @Test func withPreparedStatements() async throws { try await Self.failing(prepared: true) }
    @Test func withoutPreparedStatements() async throws { try await Self.failing(prepared: false) }

    /// Inside a transaction a failing pipeline aborts it: the error is the statement's, the transaction
    /// rolls back as a whole, and the connection is usable afterwards.
    @Test func insideATransactionTheFailureAbortsIt() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let (error, count) = try await pool.withConnection { c -> (PostgresError?, Int) in
                try c.execute(script: "CREATE TABLE t (n int PRIMARY KEY)")
                var caught: PostgresError?
                do {
                    try c.transaction { c in
                        try c.query("INSERT INTO t VALUES (\(1))")
                        try c.pipeline(["INSERT INTO t VALUES (\(2))", "INSERT INTO t VALUES (\(1))"])
                    }
                } catch let error as PostgresError {
                    caught = error
                }
                return (caught, try c.query("SELECT count(*) AS n FROM t").first!.int("n"))
            }
            #expect(error?.code == .uniqueViolation)
            #expect(count == 0)
        }
    }
}
