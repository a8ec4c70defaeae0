import Foundation
import Runtime

/// Applies the numbered SQL files of `Migrations/` (`0001_name.sql`, …) once each, in order, each in its own
/// transaction, recording a SHA-256 of its text. Two migrators started at once serialize on an advisory
/// lock, so each file is applied exactly once. An applied file whose text changed stops everything.
public struct Migrator: Sendable {
    /// One migration file.
    public struct Migration: Sendable, Equatable {
        public let version: Int
        public let name: String
        public let sql: String
    }

    /// What `migrate()` did.
    public struct Report: Sendable {
        public var applied: [String] = []
        public var alreadyApplied: Int = 0
    }

    public struct MigrationError: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    public let directory: URL
    private let logger = Logger(label: "migrate")
    /// `hashtext('livevisits.migrate')` would do too; a fixed number keeps it readable in pg_locks.
    static let lockKey: Int64 = 0x4C56_4D49_4752

    public init(directory: URL) {
        self.directory = directory
    }

    /// The migration files, sorted by version; malformed names or duplicate versions are an error.
    public func migrations() throws -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw MigrationError(message: "cannot read the migrations folder \(directory.path): \(error.localizedDescription)")
        }
        var result: [Migration] = []
        for name in names.sorted() where name.hasSuffix(".sql") {
            guard let underscore = name.firstIndex(of: "_"), let version = Int(name[..<underscore]) else {
                throw MigrationError(message: "migration file \(name) does not start with a number and an underscore")
            }
            let sql = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            if let clash = result.first(where: { $0.version == version }) {
                throw MigrationError(message: "migrations \(clash.name) and \(name) share version \(version)")
            }
            result.append(Migration(version: version, name: name, sql: sql))
        }
        return result.sorted { $0.version < $1.version }
    }

    /// Applies what is pending. Throws `MigrationError` when an applied file changed.
    @discardableResult
    public func migrate(pool: PostgresPool) async throws -> Report {
        let files = try migrations()
        let logger = self.logger
        return try await pool.withConnection { connection in
            try connection.query("SELECT pg_advisory_lock(\(Migrator.lockKey))")
            defer { _ = try? connection.query("SELECT pg_advisory_unlock(\(Migrator.lockKey))") }
            try connection.execute(
                script: """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version integer PRIMARY KEY,
                        name text NOT NULL,
                        checksum text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now()
                    )
                    """)
            let applied = try Migrator.applied(on: connection)
            var report = Report()
            for file in files {
                let checksum = try Migrator.checksum(file.sql, on: connection)
                if let existing = applied[file.version] {
                    guard existing.checksum == checksum else {
                        throw MigrationError(
                            message:
                                "migration \(file.name) was changed after it was applied (checksum \(existing.checksum.prefix(12)) in the database, \(checksum.prefix(12)) on disk); add a new migration instead"
                        )
                    }
                    report.alreadyApplied += 1
                    continue
                }
                try connection.transaction { c in
                    try c.execute(script: file.sql)
                    try c.query(
                        "INSERT INTO schema_migrations (version, name, checksum) VALUES (\(file.version), \(file.name), \(checksum))"
                    )
                }
                logger.info("applied migration", ["migration": file.name])
                report.applied.append(file.name)
            }
            return report
        }
    }

    /// The files not yet applied, or a `MigrationError` if an applied one changed (for `/readyz`).
    public func pending(pool: PostgresPool) async throws -> [String] {
        let files = try migrations()
        return try await pool.withConnection { connection in
            let exists = try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
            guard try exists.first?.bool("present") == true else { return files.map(\.name) }
            let applied = try Migrator.applied(on: connection)
            var pending: [String] = []
            for file in files {
                guard let existing = applied[file.version] else {
                    pending.append(file.name)
                    continue
                }
                if existing.checksum != (try Migrator.checksum(file.sql, on: connection)) {
                    throw MigrationError(message: "migration \(file.name) was changed after it was applied")
                }
            }
            return pending
        }
    }

    private static func applied(on connection: PostgresConnection) throws -> [Int: (name: String, checksum: String)] {
        var out: [Int: (String, String)] = [:]
        for row in try connection.query("SELECT version, name, checksum FROM schema_migrations") {
            out[try row.int("version")] = (try row.string("name"), try row.string("checksum"))
        }
        return out
    }

    private static func checksum(_ sql: String, on connection: PostgresConnection) throws -> String {
        try connection.query("SELECT encode(sha256(convert_to(\(sql), 'UTF8')), 'hex') AS sum").first!.string("sum")
    }
}
