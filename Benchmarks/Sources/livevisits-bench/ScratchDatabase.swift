import Foundation
import Postgres

/// A migrated database made for one benchmark run on the cluster of `serverURL`, dropped afterwards.
struct ScratchDatabase {
    let name: String
    let url: String
    private let serverURL: String

    static func create(serverURL: String, migrations: URL) async throws -> ScratchDatabase {
        let name = "lvbench_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased())"
        let leftovers =
            try await PostgresPool.withPool(PostgresConfiguration(url: serverURL, size: 1)) { admin in
                try await admin.withConnection {
                    try $0.execute(script: "CREATE DATABASE \"\(name)\"")
                    return try $0.query(
                        "SELECT count(*) AS n FROM pg_database WHERE datname LIKE 'lvtest\\_%' OR datname LIKE 'lvbench\\_%'"
                    ).first?.int("n") ?? 0
                }
            } - 1
        // Autovacuum visits every database of the cluster each naptime: a thousand scratch databases that test runs
        // left for inspection took ~6 % of PostgreSQL's CPU in `pipeline`, counted as this run's.
        if leftovers >= 20 {
            FileHandle.standardError.write(
                Data(
                    ("livevisits-bench: note: \(leftovers) scratch databases of earlier runs in this cluster; autovacuum visits "
                        + "each one, at a cost counted here as PostgreSQL's CPU (scripts/pg clean drops them)\n").utf8))
        }
        let database = ScratchDatabase(name: name, url: ScratchDatabase.url(serverURL, database: name), serverURL: serverURL)
        _ = try await PostgresPool.withPool(PostgresConfiguration(url: database.url, size: 1)) { pool in
            try await Migrator(directory: migrations).migrate(pool: pool)
        }
        return database
    }

    /// Creates a scratch database, lends it to `body` and drops it afterwards, also when `body` throws.
    static func with<T>(serverURL: String, migrations: URL, _ body: (ScratchDatabase) async throws -> T) async throws -> T {
        let database = try await create(serverURL: serverURL, migrations: migrations)
        do {
            let result = try await body(database)
            await database.drop()
            return result
        } catch {
            await database.drop()
            throw error
        }
    }

    /// The integer `query` answers in its column `n` (0 for no row).
    func integer(_ query: PostgresQuery) async throws -> Int {
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            try await pool.query(query).first?.int("n") ?? 0
        }
    }

    /// `VACUUM (ANALYZE)` of every table, as pgbench does before a run unless told not to, then `CHECKPOINT`: a
    /// measurement then starts from the same state whatever ran before it — its tables without the dead rows and
    /// index entries an earlier one left (which autovacuum would reclaim at its own time), fresh statistics, and
    /// no checkpoint owed. (A checkpoint started by an earlier run's WAL, or by the cluster's other databases,
    /// otherwise landed in the measurement: its sync phase, tens of thousands of files after a test run, held
    /// every commit's WAL flush back for seconds.)
    func settle() async throws {
        try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            try await pool.withConnection { c in
                try c.execute(script: "VACUUM (ANALYZE)")
                try c.execute(script: "CHECKPOINT")
            }
        }
    }

    /// Drops the database (best effort: a failure leaves a scratch database behind, named in the output).
    func drop() async {
        let name = self.name
        _ = try? await PostgresPool.withPool(PostgresConfiguration(url: serverURL, size: 1)) { admin in
            try await admin.withConnection { try $0.execute(script: "DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)") }
        }
    }

    /// A URI with one more query parameter.
    static func url(_ base: String, adding parameter: String) -> String {
        base + (base.contains("?") ? "&" : "?") + parameter
    }

    /// The server URL pointed at another database (URI or key=value form).
    static func url(_ base: String, database: String) -> String {
        if base.hasPrefix("postgres://") || base.hasPrefix("postgresql://"), var components = URLComponents(string: base) {
            components.path = "/" + database
            return components.string ?? base
        }
        return base + " dbname=\(database)"
    }
}
