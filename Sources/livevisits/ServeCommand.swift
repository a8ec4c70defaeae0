import APNs
import EventStore
import Foundation
import HTTPAPI
import HTTPServer
import Outbox
import OutboxAPNs
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// `livevisits serve [--api-only|--worker-only]` and `livevisits worker`: the HTTP API and the outbox worker,
/// together or apart, as services of one group that SIGTERM/SIGINT shut down gracefully.
enum ServeCommand {
    struct Parts: OptionSet {
        let rawValue: Int
        static let api = Parts(rawValue: 1)
        static let worker = Parts(rawValue: 2)
    }

    static func run(_ arguments: [String], parts defaultParts: Parts = [.api, .worker]) async throws {
        var parts = defaultParts
        for argument in arguments {
            switch argument {
            case "--api-only" where defaultParts == [.api, .worker]: parts = .api
            case "--worker-only" where defaultParts == [.api, .worker]: parts = .worker
            default: throw UsageError("usage: livevisits serve [--api-only|--worker-only] (or: livevisits worker)")
            }
        }
        let configuration = Configuration()
        let group = try await services(parts: parts, configuration: configuration, clock: SystemClock())
        try await group.run()
    }

    /// Builds the service group for the parts asked for (the demo uses it too).
    static func services(parts: Parts, configuration: Configuration, clock: any WallClock,
                         announce: @escaping @Sendable (String) -> Void = { Console.line($0) }) async throws -> ServiceGroup {
        let logger = Logger(label: "livevisits")
        let url = try configuration.databaseURL()
        // Few connections serve many requests best on a small machine: requests wait their turn for a
        // connection in order instead of crowding PostgreSQL (`livevisits-bench api` with 64 clients on
        // 2 cores: the same throughput with 4 to 24 connections, and p99 about 100 ms at 4–6 against 250 at 24).
        let poolSize = try configuration.databasePoolSize() ?? (parts.contains(.api) ? (parts.contains(.worker) ? 8 : 6) : 8)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, size: poolSize))
        let migrator = Migrator(directory: try configuration.migrationsDirectory())
        let pending: [String]
        do {
            pending = try await migrator.pending(pool: pool)
        } catch let error as PostgresError where error.isUnavailable {
            throw CommandFailure("cannot reach the database: \(error.message)")
        }
        guard pending.isEmpty else {
            throw CommandFailure("pending migrations (\(pending.joined(separator: ", "))): run 'livevisits migrate' first")
        }
        let outbox = Outbox(pool: pool, clock: clock)
        var services: [any Service] = []

        if parts.contains(.worker) {
            let apns: APNsConfiguration
            do {
                apns = try APNsConfiguration.fromEnvironment(configuration.environment)
            } catch {
                throw ConfigurationError(error.message)
            }
            let signer = apns.signer
            let client = APNsClient(
                configuration: apns,
                tokenStore: PostgresProviderTokenStore(pool: pool, teamId: signer.teamId, keyId: signer.keyId), clock: clock)
            let worker = OutboxWorker(pool: pool, sender: APNsPushSender(client: client), clock: clock)
            services += [client, worker.listener(url: url), worker]
            logger.info("outbox worker configured", ["apns.topic": apns.topic])
        }
        if parts.contains(.api) {
            let rules = try ProjectionRules.load(directory: configuration.projectionsDirectory)
            let readModel = try VisitReadModel(projectionsDirectory: configuration.projectionsDirectory, rules: rules)
            let environment = APIEnvironment(pool: pool, readModel: readModel, outbox: outbox, migrator: migrator, clock: clock)
            let api = LiveVisitsAPI(environment: environment)
            let threads = try configuration.httpThreads()
            let server: HTTPServer
            do {
                var httpConfiguration = try HTTPServerConfiguration(environment: configuration.environment)
                httpConfiguration.threadCount = threads
                server = try HTTPServer(configuration: httpConfiguration, clock: clock, handler: api.handler())
            } catch {
                throw ConfigurationError("LIVEVISITS_HTTP_ADDR: \(error.message)")
            }
            services += [environment.keyCache.listener(url: url), server]
            announce("livevisits API listening on http://\(server.address)")
        }
        OutboxStore(pool: pool, clock: clock).registerDepthCollector()
        SnapshotHorizonMetric(store: EventStore(pool: pool)).install()
        ProjectionLagMetric(pool: pool, synchronousProjections: [VisitReadModel.name]).install()
        return ServiceGroup(services: services, logger: logger)
    }
}
