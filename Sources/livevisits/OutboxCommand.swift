import Foundation
import Outbox
import Postgres
import Runtime
import Webhooks

/// `livevisits outbox list [--state STATE] [--limit N]` and `outbox retry ID`.
enum OutboxCommand {
    static let menu = CommandMenu(
        command: "livevisits outbox",
        entries: [
            .init("list", "[--state STATE] [--limit N]", "the newest deliveries and webhooks, one line each"),
            .init("retry", "ID", "requeue a delivery or webhook (a dead letter, say) now"),
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
            let (deliveries, webhooks) = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
                (
                    try await OutboxStore(pool: pool).list(state: state, limit: limit),
                    try await WebhookStore(pool: pool).list(state: state, limit: limit)
                )
            }
            func last(_ status: Int?, _ reason: String?) -> String {
                status.map { "\($0) \(reason ?? "")" } ?? (reason ?? "-")
            }
            // Deliveries and webhooks share one numbering: the newest of both. A webhook's last column is its body's id.
            let lines =
                deliveries.map { d in
                    (
                        d.id,
                        "\(d.id)\t\(d.state.rawValue)\t\(d.kind.rawValue)\t\(d.visitId)\t\(d.attempts)\t"
                            + "\(last(d.lastStatus, d.lastReason))\t\(d.apnsId)"
                    )
                }
                + webhooks.map { w in
                    (
                        w.id,
                        "\(w.id)\t\(w.state.rawValue)\twebhook\t\(w.visitId)\t\(w.attempts)\t"
                            + "\(last(w.lastStatus, w.lastReason))\t\(w.webhookId)"
                    )
                }
            let shown = lines.sorted { $0.0 > $1.0 }.prefix(limit)
            Console.line("id\tstate\tkind\tvisit\tattempts\tlast\tapns-id")
            for line in shown { Console.line(line.1) }
            Console.line("\(shown.count) deliveries")
        default:
            let parsed = try retrySyntax.parse(rest)
            guard let id = Int64(parsed.positionals[0]) else { throw retrySyntax.mistake("ID is a delivery id (a whole number)") }
            let url = try configuration.databaseURL()
            let requeued = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
                do {
                    let what: String
                    do {
                        let delivery = try await OutboxStore(pool: pool).retry(id: id)
                        what = "delivery \(delivery.id) (\(delivery.kind.rawValue) for visit \(delivery.visitId))"
                    } catch let error as OutboxError where error.code == .notFound {
                        let webhook = try await WebhookStore(pool: pool).retry(id: id)
                        what = "webhook \(webhook.id) (\(webhook.type) for visit \(webhook.visitId))"
                    }
                    _ = try? await pool.query("SELECT pg_notify(\(Outbox.channel), '')")
                    return what
                } catch let error as OutboxError {
                    throw CommandFailure(error.message)
                }
            }
            Console.line("requeued \(requeued)")
        }
    }
}
