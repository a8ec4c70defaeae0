import Foundation
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// A runtime failure with a message meant for the operator: one line, exit code 1.
struct CommandFailure: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

enum CommandLineInterface {
    static let menu = CommandMenu(
        command: "livevisits",
        entries: [
            .init("migrate", "", "apply pending migrations"),
            .init("serve", "[--api-only|--worker-only]", "HTTP API and outbox worker"),
            .init("worker", "", "the outbox worker alone"),
            .init("replay", "[PROJECTION]", "rebuild a projection from the event log (default: all)"),
            .init(
                "keys",
                "create --role ROLE [--subject ID] | revoke KEY_ID | list [--role ROLE] | rotate-personal-data [--new-key-file PATH]",
                "mint, revoke or list API keys; rewrap the customers' data keys"),
            .init("customers", "erase CUSTOMER_ID", "erase a customer by any id the database holds"),
            .init("outbox", "list [--state STATE] [--limit N] | retry ID", "inspect and requeue deliveries"),
            .init("channels", "list | reconcile", "the broadcast channels the product owns; reconcile them with APNs"),
            .init("prune", "", "apply the retention rules once and print what went"),
            .init("apns-sim", "[options]", "a local APNs simulator (HTTP/2 over TLS)"),
            .init("demo", "[--keep-running]", "a whole visit, end to end, on a private cluster"),
        ])

    static func run(_ arguments: [String]) async -> Int32 {
        do {
            let (command, rest) = try menu.select(arguments)
            // A misspelt level would silently log at another one: refuse it before any work starts.
            do {
                _ = try Logger.level(in: ProcessInfo.processInfo.environment)
            } catch {
                throw ConfigurationError(error.message)
            }
            switch command {
            case "migrate": try await MigrateCommand.run(rest)
            case "replay": try await ReplayCommand.run(rest)
            case "serve": try await ServeCommand.run(rest)
            case "worker": try await ServeCommand.run(rest, parts: .worker)
            case "keys": try await KeysCommand.run(rest)
            case "customers": try await CustomersCommand.run(rest)
            case "outbox": try await OutboxCommand.run(rest)
            case "channels": try await ChannelsCommand.run(rest)
            case "prune": try await PruneCommand.run(rest)
            case "apns-sim": try await APNsSimCommand.run(rest)
            case "demo": try await DemoCommand.run(rest)
            default: throw UsageError("livevisits: '\(command)' is listed but not wired")
            }
            return 0
        } catch let help as HelpRequest {
            Console.line(help.usage)
            return 0
        } catch let error as UsageError {
            fail(error.message.hasPrefix("livevisits") ? error.message : "livevisits: \(error.message)")
            return 2
        } catch let error as ConfigurationError {
            fail("livevisits: \(error.message)")
            return 2
        } catch {
            fail("livevisits: \(CommandLineInterface.describe(error))")
            return 1
        }
    }

    static func fail(_ line: String) {
        FileHandle.standardError.write(Data((line.replacingOccurrences(of: "\n", with: " ") + "\n").utf8))
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case let e as CommandFailure: e.message
        case let e as PostgresError: e.message
        case let e as Migrator.MigrationError: e.message
        case let e as ProjectionRulesError: e.message
        case let e as VisitReadModel.LoadError: e.message
        default: "\(error)"
        }
    }
}
