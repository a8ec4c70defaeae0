import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// `PostgresConnection.pipeline`: several statements in one round trip, all or nothing outside a
/// transaction, part of the transaction inside one; and the single-statement append in it.
@Suite(.timeLimit(.minutes(5))) struct PipelineTests {
    func request(_ stream: String, _ expected: ExpectedVersion) -> AppendRequest {
        AppendRequest(streamName: stream, events: [NewEvent(type: "tested", data: #"{"n": 1}"#)], expectedVersion: expected)
    }

    @Test func resultsComeBackInOrderAndTheStatementsCommitTogether() async throws {
        try await withTestDatabase { _, pool in
            @Sendable func insert(_ n: Int) -> PostgresQuery { "INSERT INTO t VALUES (\(n)) RETURNING n" }
            let (rows, failure, count) = try await pool.withConnection { c -> ([[String]], String, Int) in
                try c.execute(script: "CREATE TABLE t (n int PRIMARY KEY)")
                let results = try c.pipeline([insert(1), insert(2), "SELECT count(*) AS n FROM t"])
                let rows = try results.map { try $0.rows.map { try $0.string("n") } }
                // Again on the same connection, the statement prepared now: a failure in the middle undoes
                // the statement before it and skips the one after it.
                var failure = ""
                do {
                    try c.pipeline([insert(3), insert(1), insert(4)])
                } catch let error as PostgresError {
                    failure = error.code == .uniqueViolation ? "unique" : "\(error)"
                }
                // The connection is usable afterwards, outside pipeline mode.
                return (rows, failure, try c.query("SELECT count(*) AS n FROM t").first!.int("n"))
            }
            #expect(rows == [["1"], ["2"], ["2"]])
            #expect(failure == "unique")
            #expect(count == 2, "the rows of a failed pipeline were committed")
        }
    }

    @Test func insideATransactionThePipelineIsPartOfIt() async throws {
        try await withTestDatabase { _, pool in
            let count = try await pool.withConnection { c -> Int in
                try c.execute(script: "CREATE TABLE t (n int PRIMARY KEY)")
                struct Abandon: Error {}
                _ = try? c.transaction { c -> Void in
                    try c.pipeline(["INSERT INTO t VALUES (\(1))", "INSERT INTO t VALUES (\(2))"])
                    throw Abandon()
                }
                return try c.query("SELECT count(*) AS n FROM t").first!.int("n")
            }
            #expect(count == 0)
        }
    }

    @Test func aStatementThatDoesNotPrepareFailsAloneAndIsNotRemembered() async throws {
        try await withTestDatabase { _, pool in
            let answers = try await pool.withConnection { c -> [String] in
                var out: [String] = []
                for _ in 0..<2 {
                    do {
                        try c.pipeline(["SELECT 1 AS n", "SELECT FROM nowhere_at_all", "SELECT 2 AS n"])
                        out.append("ran")
                    } catch let error as PostgresError {
                        out.append(error.isUnavailable ? "unavailable" : "refused")
                    }
                }
                out.append(try c.pipeline(["SELECT 1 AS n", "SELECT 2 AS n"]).map { try $0.first!.string("n") }.joined())
                return out
            }
            #expect(answers == ["refused", "refused", "12"])
        }
    }

    @Test func anUnguardedAppendInAPipelineNeverCommitsWithoutItsEvent() async throws {
        try await withTestDatabase { _, pool in
            try await EventStore(pool: pool).append(request("s", .noStream))
            // Stream at 1; a writer that believes it is at 0 (its read is stale) must not write its side effects.
            let error = try await pool.withConnection { c -> EventStoreError? in
                try c.execute(script: "CREATE TABLE side (n int)")
                let stale = request("s", .noStream)
                do {
                    try c.pipeline([EventStore.appendStatement(stale, guarded: false), "INSERT INTO side VALUES (\(1))"])
                    return nil
                } catch let error as PostgresError {
                    return try EventStore.appendFailure(error, stale, on: c) as? EventStoreError
                }
            }
            #expect(error?.code == .wrongExpectedVersion)
            #expect(error?.actualVersion == 1)
            let side = try await pool.withConnection { try $0.query("SELECT count(*) AS n FROM side").first!.int("n") }
            #expect(side == 0)
        }
    }
}
