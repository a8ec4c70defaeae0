import Foundation
import Postgres
import Retention
import Runtime

/// `livevisits prune`: the retention rules of contract §10 applied once, printing `prune: <table> <n>`.
enum PruneCommand {
    static let syntax = CommandSyntax(
        command: "livevisits prune",
        summary:
            "Applies the retention rules once (batches of at most 1,000 rows) and prints 'prune: <table> <n>' for each table.",
        details:
            "LIVEVISITS_RETENTION_DAYS (default 30) keeps finished deliveries, their attempts and retired tokens; idempotency records go after 48 hours, the tokens of a visit 12 hours after it ended. Events are never deleted. Waits for nothing: a pass already running elsewhere (a worker's hourly one) makes this one do nothing."
    )

    static func run(_ arguments: [String]) async throws {
        _ = try syntax.parse(arguments)
        let configuration = Configuration()
        let url = try configuration.databaseURL()
        let settings = try configuration.retentionSettings()
        let report = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
            try await Prune(pool: pool, settings: settings).run()
        }
        guard report.ran else {
            throw CommandFailure("another retention pass is running (a worker's hourly pass); nothing was pruned")
        }
        for line in report.lines { Console.line(line) }
    }
}
