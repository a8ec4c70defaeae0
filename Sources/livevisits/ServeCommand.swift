import APNs
import EventStore
import Foundation
import HTTPAPI
import HTTPServer
import LiveActivityLedger
import Outbox
import OutboxAPNs
import PersonalData
import Postgres
import Retention
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections
import Webhooks

/// `livevisits serve [--api-only|--worker-only]` and `livevisits worker`: the HTTP API and the outbox worker,
/// together or apart, as services of one group that SIGTERM/SIGINT shut down gracefully.
enum ServeCommand {
    struct Parts: OptionSet {
        let rawValue: Int
        static let api = Parts(rawValue: 1)
        static let worker = Parts(rawValue: 2)
    }

    static let serveSyntax = CommandSyntax(
        command: "livevisits serve",
        summary: "The HTTP API and the outbox worker in one process, until SIGTERM/SIGINT (then an ordered shutdown).",
        options: [
            .flag("--api-only", "only the HTTP API (scale the API out)"),
            .flag("--worker-only", "only the outbox worker (the same as 'livevisits worker')"),
        ],
        details:
            "Configuration from the environment: LIVEVISITS_DATABASE_URL, LIVEVISITS_HTTP_ADDR, LIVEVISITS_APNS_* (Docs/operations.md)."
    )

    static let workerSyntax = CommandSyntax(
        command: "livevisits worker",
        summary: "The outbox worker alone (the same as 'livevisits serve --worker-only'), until SIGTERM/SIGINT.")

    static func run(_ arguments: [String], parts defaultParts: Parts = [.api, .worker]) async throws {
        var parts = defaultParts
        if defaultParts == [.api, .worker] {
            let parsed = try serveSyntax.parse(arguments)
            switch (parsed.has("--api-only"), parsed.has("--worker-only")) {
            case (true, true): throw serveSyntax.mistake("--api-only and --worker-only exclude each other")
            case (true, false): parts = .api
            case (false, true): parts = .worker
            case (false, false): break
            }
        } else {
            _ = try workerSyntax.parse(arguments)
        }
        let configuration = Configuration()
        _ = try configuration.webhookConfiguration()  // refused before anything starts
        try await PostgresPool.withPool(try poolConfiguration(parts: parts, configuration: configuration)) { pool in
            let group = try await services(parts: parts, pool: pool, configuration: configuration, clock: SystemClock())
            try await group.run()
        }
    }

    /// The pool a process of these parts uses.
    static func poolConfiguration(parts: Parts, configuration: Configuration) throws -> PostgresConfiguration {
        let url = try configuration.databaseURL()
        // Few connections serve many requests best on a small machine: requests wait their turn for a
        // connection in order instead of crowding PostgreSQL.
        let size = try configuration.databasePoolSize() ?? (parts.contains(.api) ? (parts.contains(.worker) ? 8 : 6) : 8)
        return PostgresConfiguration(
            url: url, size: size, usePreparedStatements: try configuration.usePreparedStatements(),
            workTimeoutSeconds: try configuration.databaseWorkTimeoutSeconds())
    }

    /// Builds the service group for the parts asked for, on a pool the caller lends and closes after the
    /// group's `run()` returned (the demo uses it too). Stages, in start order: the APNs client; then what
    /// takes work in (HTTP server, LISTENers, outbox worker). Shutdown runs backwards: stop accepting and
    /// claiming, let the sends on the wire finish, close the client; the caller closes the pool. Unless
    /// `simulated` (the demo, whose APNs is its own simulator by design), an APNs configuration that would
    /// send production pushes away from Apple is warned of (`APNsConfiguration.productionWarnings`).
    static func services(
        parts: Parts, pool: PostgresPool, configuration: Configuration, clock: any WallClock, simulated: Bool = false,
        announce: @escaping @Sendable (String) -> Void = { Console.line($0) }
    ) async throws -> ServiceGroup {
        let logger = Logger(label: "livevisits")
        let listenURL = try configuration.listenURL()
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
        // The rules are read by the worker too: the push budget (contract §8) is theirs.
        let rules = try ProjectionRules.load(directory: configuration.projectionsDirectory)
        let personalData = try configuration.personalDataKeys()
        // A process that cannot open the customers' data keys would answer every one of them as unreadable:
        // it does not start (Docs/operations.md, "Recovering from a lost personal-data key").
        if let problem = try await personalData.keyFileProblem(pool: pool) { throw CommandFailure(problem.message) }
        let retention = try configuration.retentionSettings()
        let webhooks = try configuration.webhookConfiguration()
        var outboxConfiguration = OutboxConfiguration()
        outboxConfiguration.priority10PerHour = rules.budget.priority10PerHour
        outboxConfiguration.priority10PerHourFrequent = rules.budget.priority10PerHourFrequent
        outboxConfiguration.activityRenewalSeconds = Double(rules.activityRenewalSeconds)
        outboxConfiguration.activityLifetimeSeconds = Double(rules.activityLifetimeSeconds)
        outboxConfiguration.maxRenewals = rules.maxRenewals
        var transport: [any Service] = []
        var pushWorker: OutboxWorker?
        var intake: [any Service] = []
        // One cache of unwrapped data keys for the API's answers and the worker's start pushes, used while
        // its listener hears erasures (Docs/operations.md, "Erasure").
        let dataKeyCache = PersonalDataKeyCache()
        intake.append(dataKeyCache.listener(url: listenURL))

        // One APNs client per process: the worker's pushes and, for the API, channel creation (contract §7).
        // An API without the APNs variables still serves; its `PUT …/channel` answers 503.
        var client: APNsClient?
        if parts.contains(.worker) || configuration.environment["LIVEVISITS_APNS_KEY_FILE"] != nil {
            try configuration.checkSigningKeyFile()
            let apns: APNsConfiguration
            do {
                apns = try APNsConfiguration.fromEnvironment(configuration.environment)
            } catch {
                throw ConfigurationError(error.message)
            }
            if !simulated {
                for warning in apns.productionWarnings { logger.warning("apns configuration", ["warning": warning]) }
            }
            let made = APNsClient(
                configuration: apns, tokenStore: try PostgresProviderTokenStore(pool: pool, signer: apns.signer), clock: clock)
            transport.append(made)
            client = made
        }
        let channelService = client.map { APNsChannelService(client: $0) }
        let maximumChannels = try configuration.maximumChannels()
        outboxConfiguration.channelDeleteAfterEndSeconds = Double(rules.channelDeleteAfterEndSeconds)
        let outbox = Outbox(pool: pool, configuration: outboxConfiguration, clock: clock)
        if parts.contains(.worker), let client, let channelService {
            let worker = OutboxWorker(
                pool: pool,
                sender: SealedPushSender(
                    inner: APNsPushSender(client: client), keys: personalData, pool: pool, cache: dataKeyCache),
                configuration: outboxConfiguration, clock: clock,
                renewer: ActivityRenewals(rules: rules))
            pushWorker = worker
            let channels = ChannelMaintenance(
                lifecycle: ChannelLifecycle(
                    pool: pool, service: channelService, configuration: outboxConfiguration, clock: clock),
                clock: clock)
            intake += [worker.listener(url: listenURL), worker, channels]
            // Retention (contract §10): hourly, one pass at a time across the fleet (Prune's advisory lock).
            intake.append(PrunePass(prune: Prune(pool: pool, settings: retention, clock: clock)))
            logger.info("outbox worker configured", ["apns.topic": client.configuration.topic])
        }
        intake += try await WebhookWiring.services(
            webhooks, worker: parts.contains(.worker), pool: pool, listenURL: listenURL, clock: clock,
            opener: PersonalDataOpener(keys: personalData, cache: dataKeyCache),
            pushesBacklogged: { [pushWorker] in pushWorker?.hasBacklog ?? false })
        if parts.contains(.api) {
            let readModel = try VisitReadModel(projectionsDirectory: configuration.projectionsDirectory, rules: rules)
            let environment = APIEnvironment(
                pool: pool, readModel: readModel, outbox: outbox, migrator: migrator, clock: clock, personalData: personalData,
                channelService: channelService, maximumChannels: maximumChannels, dataKeyCache: dataKeyCache,
                commandBatches: try configuration.commandBatches(), commandWrites: try configuration.commandWrites(),
                limits: try configuration.requestLimits())
            let api = LiveVisitsAPI(environment: environment)
            let threads = try configuration.httpThreads()
            let maxConnections = try configuration.httpMaxConnections()
            let maxConnectionsPerAddress = try configuration.httpMaxConnectionsPerAddress()
            try OpenFilesLimit.fit(connections: maxConnections, databaseConnections: pool.configuration.size)
            let server: HTTPServer
            do {
                var httpConfiguration = try HTTPServerConfiguration(environment: configuration.environment)
                httpConfiguration.threadCount = threads
                httpConfiguration.connectionLimit = maxConnections
                httpConfiguration.perAddressConnectionLimit = maxConnectionsPerAddress
                httpConfiguration.holdingPathPrefixes = LiveVisitsAPI.holdingPathPrefixes
                server = try HTTPServer(configuration: httpConfiguration, clock: clock, handler: api.handler())
            } catch {
                throw ConfigurationError("LIVEVISITS_HTTP_ADDR: \(error.message)")
            }
            intake += [
                environment.keyCache.listener(url: listenURL), environment.locations.listener(url: listenURL),
                environment.locations,
            ]
            // The tracking links' memory, with the listeners it needs to answer at all.
            intake += environment.trackingLinks.cards.listeners(url: listenURL) as [any Service]
            intake += [environment.trackingLinks.cards, server]
            announce("livevisits API listening on http://\(server.address)")
        }
        OutboxStore(pool: pool, clock: clock).registerDepthCollector()
        ChannelStore(pool: pool, clock: clock).registerCollector()
        LiveActivityLedger(settings: LiveActivityLedger.Settings(rules: rules), clock: clock).registerCollector(pool: pool)
        SnapshotHorizonMetric(store: EventStore(pool: pool)).install()
        ProjectionLagMetric(pool: pool, synchronousProjections: [VisitReadModel.name]).install()
        return ServiceGroup(stages: [transport, intake], logger: logger)
    }
}
