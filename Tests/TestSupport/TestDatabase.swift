import Foundation
import Postgres
import TestSupportCore

/// Scratch databases on the project's private PostgreSQL cluster (started by `scripts/pg start`; its URL
/// comes from `LIVEVISITS_DATABASE_URL`, or from `scripts/pg url` when unset). Each call makes a fresh,
/// migrated database so tests never see each other's rows.
public enum TestDatabase {
    /// The repository root (where Package.swift is).
    public static let repositoryRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    public static var migrationsDirectory: URL { repositoryRoot.appendingPathComponent("Migrations") }
    public static var projectionsDirectory: URL { repositoryRoot.appendingPathComponent("Projections") }

    /// The cluster's maintenance URL (database `livevisits`).
    public static let serverURL: String = {
        if let url = ProcessInfo.processInfo.environment["LIVEVISITS_DATABASE_URL"], !url.isEmpty { return url }
        let outcome = try? Subprocess.runBlocking(repositoryRoot.appendingPathComponent("scripts/pg").path, ["url"])
        return (outcome?.stdout ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }()

    /// Creates an empty database and returns its URL.
    public static func createEmpty(prefix: String = "lvtest") async throws -> String {
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased())"
        try await PostgresPool.withPool(PostgresConfiguration(url: serverURL, size: 1)) { admin in
            try await admin.withConnection { connection in
                try connection.execute(script: "CREATE DATABASE \"\(name)\"")
            }
        }
        return url(forDatabase: name)
    }

    /// Creates a database, applies the project's migrations and returns a pool on it.
    public static func create(poolSize: Int = 8) async throws -> (url: String, pool: PostgresPool) {
        let url = try await createEmpty()
        // Generous timeouts: a loaded CI machine can take seconds to fork backends; tests must not flake on it.
        let pool = PostgresPool(
            configuration: PostgresConfiguration(
                url: url, size: poolSize, acquireTimeoutSeconds: 30, connectTimeoutSeconds: 15))
        try await Migrator(directory: migrationsDirectory).migrate(pool: pool)
        return (url, pool)
    }

    /// Creates a database, applies the project's migrations and returns its URL: for a test that opens its own
    /// pools on it or hands it to a process.
    public static func createMigrated() async throws -> String {
        try await withTestDatabase(poolSize: 1) { url, _ in url }
    }

    /// Applies on `pool` the project's migrations whose file names sort before `version` ("0040"): the schema
    /// as an older release left it, for a test of what a later migration does to rows written under it.
    public static func migrate(before version: String, pool: PostgresPool) async throws {
        let before = FileManager.default.temporaryDirectory.appendingPathComponent("mig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: before, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: before) }
        let all = try FileManager.default.contentsOfDirectory(atPath: migrationsDirectory.path).filter { $0.hasSuffix(".sql") }
        for name in all where name < version {
            try FileManager.default.copyItem(
                at: migrationsDirectory.appendingPathComponent(name), to: before.appendingPathComponent(name))
        }
        try await Migrator(directory: before).migrate(pool: pool)
    }

    /// Adds a connection parameter to a URI or key=value connection string.
    public static func url(_ url: String, adding parameter: String) -> String {
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return url + (url.contains("?") ? "&" : "?") + parameter
        }
        return url + " " + parameter
    }

    /// The server URL with another database name.
    public static func url(forDatabase name: String) -> String {
        let base = serverURL
        if base.hasPrefix("postgres://") || base.hasPrefix("postgresql://") {
            var components = URLComponents(string: base)!
            components.path = "/" + name
            return components.string!
        }
        return base + " dbname=\(name)"
    }
}
