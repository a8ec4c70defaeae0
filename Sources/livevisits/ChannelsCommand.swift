import APNs
import Foundation
import LiveActivityLedger
import Outbox
import OutboxAPNs
import Postgres
import Runtime

/// `livevisits channels list` and `livevisits channels reconcile` (contract §7).
enum ChannelsCommand {
    static let menu = CommandMenu(
        command: "livevisits channels",
        entries: [
            .init("list", "", "the broadcast channels the product owns: visit, environment, channel id, state"),
            .init("reconcile", "", "delete orphaned channels at APNs, forget the ones APNs no longer lists"),
        ])

    static let listSyntax = CommandSyntax(
        command: "livevisits channels list",
        summary: "Lists the fleet's broadcast channels, one line each: visit id, environment, channel id, state.")

    static let reconcileSyntax = CommandSyntax(
        command: "livevisits channels reconcile",
        summary:
            "Reconciles the fleet's channels with APNs' list in each environment: deletes channels no visit owns (never while a creation is in flight), forgets those APNs does not list.",
        details: "Needs LIVEVISITS_DATABASE_URL and the LIVEVISITS_APNS_* variables (Docs/operations.md).")

    static func run(_ arguments: [String]) async throws {
        let (action, rest) = try menu.select(arguments)
        let configuration = Configuration()
        switch action {
        case "list":
            _ = try listSyntax.parse(rest)
            let url = try configuration.databaseURL()
            let channels = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 1)) { pool in
                try await ChannelStore(pool: pool).list()
            }
            for channel in channels where channel.state != .creating {
                Console.line(
                    "\(channel.visitId)\t\(channel.environment.rawValue)\t\(channel.channelId ?? "-")\t\(channel.state.rawValue)")
            }
        default:
            _ = try reconcileSyntax.parse(rest)
            let url = try configuration.databaseURL()
            try configuration.checkSigningKeyFile()
            let apns: APNsConfiguration
            do {
                apns = try APNsConfiguration.fromEnvironment(configuration.environment)
            } catch {
                throw ConfigurationError(error.message)
            }
            let lines = try await PostgresPool.withPool(PostgresConfiguration(url: url, size: 2)) { pool -> [String] in
                let client = APNsClient(
                    configuration: apns, tokenStore: try PostgresProviderTokenStore(pool: pool, signer: apns.signer))
                let lifecycle = ChannelLifecycle(pool: pool, service: APNsChannelService(client: client))
                var lines: [String] = []
                for environment in PushEnvironment.allCases {
                    do {
                        lines.append(try await lifecycle.reconcile(environment).line)
                    } catch let failure as ChannelFailure {
                        throw CommandFailure(
                            "channels reconcile: \(environment.rawValue): APNs did not list its channels: \(failure)")
                    }
                }
                await client.shutdown()
                return lines
            }
            for line in lines { Console.line(line) }
        }
    }
}
