import Foundation
import Postgres
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(5))) struct MigratorTests {
    func scratchFolder(_ files: [String: String]) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (name, sql) in files {
            try sql.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return dir
    }

    @Test func appliesEachFileOnceInOrder() async throws {
        let url = try await TestDatabase.createEmpty()
        let pool = PostgresPool(url: url, size: 2)
        let dir = try scratchFolder([
            "0002_second.sql": "INSERT INTO t VALUES (2);",
            "0001_first.sql": "CREATE TABLE t (n int); INSERT INTO t VALUES (1);",
        ])
        let report = try await Migrator(directory: dir).migrate(pool: pool)
        #expect(report.applied == ["0001_first.sql", "0002_second.sql"])
        let again = try await Migrator(directory: dir).migrate(pool: pool)
        #expect(again.applied.isEmpty)
        #expect(again.alreadyApplied == 2)
        #expect(try await pool.query("SELECT array_agg(n ORDER BY n)::text AS a FROM t").first!.string("a") == "{1,2}")
    }

    @Test func aChangedAppliedFileIsRefused() async throws {
        let url = try await TestDatabase.createEmpty()
        let pool = PostgresPool(url: url, size: 2)
        let dir = try scratchFolder(["0001_first.sql": "CREATE TABLE t (n int);"])
        try await Migrator(directory: dir).migrate(pool: pool)
        try "CREATE TABLE t (n bigint);".write(
            to: dir.appendingPathComponent("0001_first.sql"), atomically: true, encoding: .utf8)
        do {
            try await Migrator(directory: dir).migrate(pool: pool)
            Issue.record("a changed migration was accepted")
        } catch let error as Migrator.MigrationError {
            #expect(error.message.contains("0001_first.sql"))
            #expect(error.message.contains("changed"))
        }
    }

    @Test func aFailingMigrationLeavesNothingBehind() async throws {
        let url = try await TestDatabase.createEmpty()
        let pool = PostgresPool(url: url, size: 2)
        let dir = try scratchFolder(["0001_bad.sql": "CREATE TABLE t (n int); SELECT * FROM missing_table;"])
        await #expect(throws: PostgresError.self) { try await Migrator(directory: dir).migrate(pool: pool) }
        #expect(try await pool.query("SELECT to_regclass('t') IS NULL AS gone").first!.bool("gone"))
        #expect(try await pool.query("SELECT count(*) AS n FROM schema_migrations").first!.int("n") == 0)
    }

    @Test func concurrentMigratorsApplyEachFileOnce() async throws {
        let url = try await TestDatabase.createEmpty()
        let dir = try scratchFolder([
            "0001_slow.sql": "CREATE TABLE t (n int); SELECT pg_sleep(0.3); INSERT INTO t VALUES (1);",
            "0002_more.sql": "INSERT INTO t VALUES (2);",
        ])
        let reports = try await withThrowingTaskGroup(of: Migrator.Report.self) { group in
            for _ in 0..<4 {
                group.addTask { try await Migrator(directory: dir).migrate(pool: PostgresPool(url: url, size: 1)) }
            }
            return try await group.reduce(into: [Migrator.Report]()) { $0.append($1) }
        }
        #expect(reports.map(\.applied.count).reduce(0, +) == 2)
        let pool = PostgresPool(url: url, size: 1)
        #expect(try await pool.query("SELECT count(*) AS n FROM t").first!.int("n") == 2)
    }

    @Test func theProjectsMigrationsApplyToAnEmptyDatabase() async throws {
        try await withTestDatabase { _, pool async throws in
            let pending = try await Migrator(directory: TestDatabase.migrationsDirectory).pending(pool: pool)
            #expect(pending.isEmpty)
        }
    }
}
