import Foundation
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// A usage mistake: printed as one line, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// A runtime failure with a message meant for the operator: one line, exit code 1.
struct CommandFailure: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

enum CommandLineInterface {
    static let usage = """
        usage: livevisits <command> [options]
          migrate                          apply pending migrations
          serve [--api-only|--worker-only] HTTP API and outbox worker
          worker                           the outbox worker alone
          replay [PROJECTION]              rebuild a projection from the event log (default: all)
          keys create --role ROLE [--subject ID] | keys revoke KEY_ID
          outbox list [--state pending|dead|sent] | outbox retry ID
          apns-sim [options]               a local APNs simulator (HTTP/2 over TLS)
          demo [--keep-running]            a whole visit, end to end, on a private cluster
        """

    static func run(_ arguments: [String]) async -> Int32 {
        guard let command = arguments.first else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return 2
        }
        let rest = Array(arguments.dropFirst())
        do {
            switch command {
            case "migrate": try await MigrateCommand.run(rest)
            case "replay": try await ReplayCommand.run(rest)
            case "serve": try await ServeCommand.run(rest)
            case "worker": try await ServeCommand.run(rest, parts: .worker)
            case "keys": try await KeysCommand.run(rest)
            case "outbox": try await OutboxCommand.run(rest)
            case "apns-sim": try await APNsSimCommand.run(rest)
            case "demo": try await DemoCommand.run(rest)
            case "help", "--help", "-h":
                print(usage)
            default:
                throw UsageError("unknown command '\(command)'; run 'livevisits help'")
            }
            return 0
        } catch let error as UsageError {
            fail("livevisits: \(error.message)")
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
