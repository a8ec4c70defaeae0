import Foundation
import Outbox
import Postgres

/// `livevisits outbox list [--state STATE] [--limit N]` and `outbox retry ID`.
enum OutboxCommand {
    static let usage = "usage: livevisits outbox list [--state pending|dead|sent|…] [--limit N] | outbox retry ID"

    static func run(_ arguments: [String]) async throws {
        guard let action = arguments.first else { throw UsageError(usage) }
        let configuration = Configuration()
        switch action {
        case "list":
            var state: DeliveryState?
            var limit = 50
            var rest = arguments.dropFirst()
            while let flag = rest.popFirst() {
                switch flag {
                case "--state":
                    guard let text = rest.popFirst(), let parsed = DeliveryState(rawValue: text) else {
                        throw UsageError("--state takes one of: \(DeliveryState.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    state = parsed
                case "--limit":
                    guard let text = rest.popFirst(), let n = Int(text), n > 0 else { throw UsageError(usage) }
                    limit = n
                default: throw UsageError(usage)
                }
            }
            let pool = PostgresPool(configuration: PostgresConfiguration(url: try configuration.databaseURL(), size: 1))
            defer { Task { await pool.close() } }
            let deliveries = try await OutboxStore(pool: pool).list(state: state, limit: limit)
            Console.line("id\tstate\tkind\tvisit\tattempts\tlast\tapns-id")
            for d in deliveries {
                let last = d.lastStatus.map { "\($0) \(d.lastReason ?? "")" } ?? (d.lastReason ?? "-")
                Console.line("\(d.id)\t\(d.state.rawValue)\t\(d.kind.rawValue)\t\(d.visitId)\t\(d.attempts)\t\(last)\t\(d.apnsId)")
            }
            Console.line("\(deliveries.count) deliveries")
        case "retry":
            guard arguments.count == 2, let id = Int64(arguments[1]) else { throw UsageError(usage) }
            let pool = PostgresPool(configuration: PostgresConfiguration(url: try configuration.databaseURL(), size: 1))
            defer { Task { await pool.close() } }
            do {
                let delivery = try await OutboxStore(pool: pool).retry(id: id)
                _ = try? await pool.query("SELECT pg_notify(\(Outbox.channel), '')")
                Console.line("requeued delivery \(delivery.id) (\(delivery.kind.rawValue) for visit \(delivery.visitId))")
            } catch let error as OutboxError {
                throw CommandFailure(error.message)
            }
        default:
            throw UsageError(usage)
        }
    }
}
