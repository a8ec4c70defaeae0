import Foundation
import Outbox
import Postgres
import Runtime

/// `livevisits outbox list [--state STATE] [--limit N]` and `outbox retry ID`.
enum OutboxCommand {
    static let menu = CommandMenu(
        command: "livevisits outbox",
        entries: [
            .init("list", "[--state STATE] [--limit N]", "the newest deliveries, one line each"),
            .init("retry", "ID", "requeue a delivery (a dead letter, say) now"),
        ])

    static let listSyntax = CommandSyntax(
        command: "livevisits outbox list",
        summary: "Lists deliveries, newest first.",
        options: [
            .value("--state", "STATE", DeliveryState.allCases.map(\.rawValue).joined(separator: "|")),
            .value("--limit", "N", "at most N lines (default 50)"),
        ])

    static let retrySyntax = CommandSyntax(
        command: "livevisits outbox retry", summary: "Requeues a delivery now.", positionals: "ID", positionalCount: 1...1)

    static func run(_ arguments: [String]) async throws {
        let (action, rest) = try menu.select(arguments)
        let configuration = Configuration()
        switch action {
        case "list":
            let parsed = try listSyntax.parse(rest)
            let state = try parsed.choice("--state", among: DeliveryState.allCases.map(\.rawValue)).flatMap(
                DeliveryState.init(rawValue:))
            let limit = try parsed.integer("--limit", in: 1...Int.max) ?? 50
            let url = try configuration.databaseURL()
            let deliveries = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
                try await OutboxStore(pool: pool).list(state: state, limit: limit)
            }
            Console.line("id\tstate\tkind\tvisit\tattempts\tlast\tapns-id")
            for d in deliveries {
                let last = d.lastStatus.map { "\($0) \(d.lastReason ?? "")" } ?? (d.lastReason ?? "-")
                Console.line(
                    "\(d.id)\t\(d.state.rawValue)\t\(d.kind.rawValue)\t\(d.visitId)\t\(d.attempts)\t\(last)\t\(d.apnsId)")
            }
            Console.line("\(deliveries.count) deliveries")
        default:
            let parsed = try retrySyntax.parse(rest)
            guard let id = Int64(parsed.positionals[0]) else { throw retrySyntax.mistake("ID is a delivery id (a whole number)") }
            let url = try configuration.databaseURL()
            let delivery = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
                do {
                    let delivery = try await OutboxStore(pool: pool).retry(id: id)
                    _ = try? await pool.query("SELECT pg_notify(\(Outbox.channel), '')")
                    return delivery
                } catch let error as OutboxError {
                    throw CommandFailure(error.message)
                }
            }
            Console.line("requeued delivery \(delivery.id) (\(delivery.kind.rawValue) for visit \(delivery.visitId))")
        }
    }
}
