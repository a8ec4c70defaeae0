import TestSupport
import Testing

@testable import Postgres

/// `pipeline(_:executed:)`: the statements' results come back before the commit, and `executed` is called then
/// — while the commit still waits — and not at all when a statement fails. The commit here waits on a lock the
/// test holds (a deferred constraint trigger takes it at commit time), so nothing depends on timing: had the
/// call come only after the commit, the commit would wait for the lock until `lock_timeout` fails it.
@Suite(.timeLimit(.minutes(1))) struct PipelineExecutedTests {
    static let lock = 7_219_001

    /// A connection that writes (with or without prepared statements) and one that holds the lock and looks.
    static func connections(prepared: Bool) async throws -> (writer: PostgresConnection, other: PostgresConnection) {
        let (url, setup) = try await TestDatabase.create(poolSize: 1)
        try await setup.withConnection { c in
            try c.execute(
                script: """
                    CREATE TABLE t (n int PRIMARY KEY);
                    CREATE FUNCTION t_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN PERFORM pg_advisory_xact_lock(\(lock)); RETURN NULL; END $$;
                    CREATE CONSTRAINT TRIGGER t_commit AFTER INSERT ON t DEFERRABLE INITIALLY DEFERRED
                        FOR EACH ROW EXECUTE FUNCTION t_commit();
                    """)
        }
        await setup.close()
        let writer = try PostgresConnection(url: url, usePreparedStatements: prepared)
        try writer.execute(script: "SET lock_timeout = '10s'")
        return (writer, try PostgresConnection(url: url))
    }

    static func count(_ c: PostgresConnection) throws -> Int? {
        try c.query("SELECT count(*)::int AS n FROM t").first?.int("n")
    }

    @Test(arguments: [true, false]) func executedComesWhileTheCommitWaits(prepared: Bool) async throws {
        let (writer, other) = try await Self.connections(prepared: prepared)
        _ = try other.query("SELECT pg_advisory_lock(\(Self.lock))")
        var seen: [Int] = []
        let rows = try writer.pipeline(["INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)", "SELECT 3 AS n"]) {
            // Executed, not committed: the other session sees no row yet; then the commit may go on.
            seen.append((try? Self.count(other)) ?? -1)
            _ = try? other.query("SELECT pg_advisory_unlock(\(Self.lock))")
        }
        #expect(seen == [0], "executed was called before the commit, and once")
        #expect(try rows.last?.first?.int("n") == 3)
        #expect(try Self.count(other) == 2, "then it committed")
    }

    @Test func executedIsNotCalledWhenAStatementFails() async throws {
        let (writer, other) = try await Self.connections(prepared: true)
        var calls = 0
        #expect(throws: PostgresError.self) {
            try writer.pipeline(["INSERT INTO t VALUES (1)", "SELECT 1 / \(0)::int AS n"]) { calls += 1 }
        }
        #expect(calls == 0)
        #expect(try Self.count(other) == 0)
    }
}
