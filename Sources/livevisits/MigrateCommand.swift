import Foundation
import Postgres

/// `livevisits migrate`: applies pending migrations once (safe when two run at once).
enum MigrateCommand {
    static func run(_ arguments: [String]) async throws {
        guard arguments.isEmpty else { throw UsageError("migrate takes no arguments") }
        let configuration = Configuration()
        let pool = PostgresPool(configuration: PostgresConfiguration(url: try configuration.databaseURL(), size: 1))
        defer { Task { await pool.close() } }
        let report = try await Migrator(directory: try configuration.migrationsDirectory()).migrate(pool: pool)
        if report.applied.isEmpty {
            print("migrations are current (\(report.alreadyApplied) applied)")
        } else {
            for name in report.applied { print("applied \(name)") }
        }
    }
}
