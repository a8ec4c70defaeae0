import Foundation
import Postgres
import Runtime

/// `livevisits migrate`: applies pending migrations once (safe when two run at once).
enum MigrateCommand {
    static let syntax = CommandSyntax(
        command: "livevisits migrate",
        summary: "Applies pending migrations once (safe when two run at once); refuses to run if an applied file changed.",
        details: "Reads LIVEVISITS_DATABASE_URL and LIVEVISITS_MIGRATIONS_DIR (default ./Migrations).")

    static func run(_ arguments: [String]) async throws {
        _ = try syntax.parse(arguments)
        let configuration = Configuration()
        let url = try configuration.databaseURL()
        let directory = try configuration.migrationsDirectory()
        let report = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            try await Migrator(directory: directory).migrate(pool: pool)
        }
        if report.applied.isEmpty {
            Console.line("migrations are current (\(report.alreadyApplied) applied)")
        } else {
            for name in report.applied { Console.line("applied \(name)") }
        }
    }
}
