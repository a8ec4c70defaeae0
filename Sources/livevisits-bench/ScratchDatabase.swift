import Foundation
import Postgres

/// A migrated database made for one benchmark run on the cluster of `serverURL`, dropped afterwards.
struct ScratchDatabase {
    let name: String
    let url: String
    private let serverURL: String

    static func create(serverURL: String, migrations: URL) async throws -> ScratchDatabase {
        let name = "lvbench_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased())"
        let admin = PostgresPool(url: serverURL, size: 1)
        try await admin.withConnection { try $0.execute(script: "CREATE DATABASE \"\(name)\"") }
        await admin.close()
        let database = ScratchDatabase(name: name, url: ScratchDatabase.url(serverURL, database: name), serverURL: serverURL)
        let pool = PostgresPool(url: database.url, size: 1)
        try await Migrator(directory: migrations).migrate(pool: pool)
        await pool.close()
        return database
    }

    /// Drops the database (best effort: a failure leaves a scratch database behind, named in the output).
    func drop() async {
        let admin = PostgresPool(url: serverURL, size: 1)
        let name = self.name
        _ = try? await admin.withConnection { try $0.execute(script: "DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)") }
        await admin.close()
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
