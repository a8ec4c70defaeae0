import TestSupport
import Testing

@testable import Postgres

/// The prepared-statement cache is keyed by a statement's UTF-8 bytes (`StatementText`): texts that differ
/// only in a non-ASCII character are two statements, the same text is one, in and out of a pipeline.
@Suite(.timeLimit(.minutes(1))) struct PreparedStatementCacheTests {
    @Test func textsDifferingInOneNonASCIICharacterAreTwoKeys() {
        let a = StatementText("SELECT 1 -- contract §8")
        let b = StatementText("SELECT 1 -- contract §9")
        #expect(a != b)
        #expect(a == StatementText("SELECT 1 -- contract §8"))
        #expect(a.hashValue == StatementText("SELECT 1 -- contract §8").hashValue)
        // The same characters in another normalization are other bytes, so another statement (never a wrong one).
        #expect(StatementText("SELECT 'é'") != StatementText("SELECT 'e\u{301}'"))
    }

    @Test func eachStatementRunsItsOwnTextWhenPreparedAndReused() async throws {
        let url = try await TestDatabase.createMigrated()
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1, usePreparedStatements: true)) { pool in
            let eight: PostgresQuery = "SELECT \(8)::int AS n -- §8"
            let nine: PostgresQuery = "SELECT \(9)::int + 0 AS n -- §"
            for _ in 0..<3 {
                let values = try await pool.withConnection { c in
                    try c.pipeline([eight, nine, eight]).map { try $0.first!.int("n") }
                        + [try c.query(nine).first!.int("n")]
                }
                #expect(values == [8, 9, 8, 9])
            }
        }
    }
}
