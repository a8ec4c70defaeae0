import APIStores
import CustomerErasure
import Foundation
import HTTPServer
import LiveActivityLedger
import Outbox
import PersonalData
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections

/// What a page of `GET /v1/visits` is read for: its filter after the caller's role narrowed it, and whether the
/// caller may see anything at all. Two asks with equal ones get the same answer.
public struct VisitListAsk: Hashable, Sendable {
    var filter: VisitReadModel.ListFilter
    var visible: Bool
}

/// Everything the API's handlers use, built once by the executable. A class: every handler closure captures
/// it, and a reference is one retain where a struct of a dozen references was a dozen per capture.
public final class APIEnvironment: Sendable {
    /// The database the use cases run on: handed to them, never used here for a connection.
    public let pool: DatabasePool
    public let readModel: VisitReadModel
    public let commands: VisitCommandHandler
    /// Group commit for commands without an idempotency key.
    public let batcher: VisitCommandBatcher
    /// Technicians' location fixes and the visits under way they move (a service of the API process: run it
    /// and its `listener(url:)` next to the server).
    public let locations: TechnicianLocations
    public let pushes: OutboxPushes
    public var tokens: TokenRegistry { ledger.tokens }
    /// The Live Activity ledger: what each customer device shows.
    public let ledger: LiveActivityLedger
    public let outboxStore: OutboxStore
    public let migrator: SchemaMigrations
    public let clock: any WallClock
    /// The API keys' use cases: minting, the caller behind a key, revocation.
    public let keys: APIKeyRegistry
    /// Live keys recently read; used once its `listener(url:)` runs (see `APIKeyCache`).
    public var keyCache: APIKeyCache { keys.cache }
    /// What `GET /metrics` renders; the event store counts appended events in it.
    public let metrics: Metrics
    /// The fleet's broadcast channels (contract §7).
    public let channels: ChannelStore
    /// APNs' channel management; nil when sending is not configured (`PUT …/channel` answers 503).
    public let channelService: (any ChannelService)?
    /// The customers' data keys: the command path seals the personal fields under them and every answer
    /// is opened with them on its way out (`LiveVisitsAPI.handler()`).
    public let personalData: PersonalDataKeys
    /// The device writes (contract §9).
    public let devices: DeviceRegistrations
    /// Reads of visits: one, a page, a history.
    public let visits: VisitQueries
    /// The pages of `GET /v1/visits` being read, shared by the identical asks that wait for them.
    public let visitLists = SharedRuns<VisitListAsk, HTTPResponse>()
    /// Write transactions, with the answer kept under an Idempotency-Key.
    public let transactions: IdempotentTransactions
    /// A visit's deliveries, for the console.
    public let deliveries: VisitDeliveries
    /// Tracking links: a visit's card for customers without the app. Its memory (`trackingLinks.cards`) is a
    /// service of the API process: run it and its `listeners(url:)` next to the server.
    public let trackingLinks: TrackingLinks
    /// The fleet's sending pause, for operators.
    public let sendingPause: SendingPauseView
    /// What `/readyz` asks of the database.
    public let readiness: DatabaseReadiness
    /// The right to be forgotten (`DELETE /v1/customers/{id}`).
    public let erasure: CustomerErasure
    /// Data keys recently read for opening answers; used once its `listener(url:)` runs (see
    /// `PersonalDataKeyCache`).
    public let dataKeyCache: PersonalDataKeyCache
    /// What one caller may ask of this process (rate limit, authentication lockout, `/readyz`'s cache).
    public let limits: RequestLimits
    /// The per-key rate limit, on `clock`; nil without one.
    let rateLimiter: KeyRateLimiter?
    /// The per-address lockout after failed authentications, on `clock`; nil without one.
    let lockout: AuthenticationLockout?
    /// `/readyz`'s latest answer, reused for `limits.readinessCacheSeconds`.
    let readinessCache = ReadinessCache()

    public init(
        pool: DatabasePool, readModel: VisitReadModel, outbox: Outbox, migrator: SchemaMigrations,
        clock: any WallClock = SystemClock(),
        keyCache: APIKeyCache = APIKeyCache(), metrics: Metrics = .shared,
        personalData: PersonalDataKeys = PersonalDataKeys(current: nil), channelService: (any ChannelService)? = nil,
        maximumChannels: Int = ChannelStore.defaultMaximumChannels, dataKeyCache: PersonalDataKeyCache = PersonalDataKeyCache(),
        commandBatches: Int = VisitCommandBatcher.defaultConcurrentBatches,
        commandWrites: Int = VisitCommandBatcher.defaultConcurrentWrites, limits: RequestLimits = .standard
    ) {
        self.limits = limits
        self.rateLimiter = limits.requestsPerSecond.map { KeyRateLimiter(requestsPerSecond: $0) }
        self.lockout = limits.authenticationFailuresPerMinute.map { AuthenticationLockout(limit: $0) }
        self.personalData = personalData
        self.dataKeyCache = dataKeyCache
        self.channelService = channelService
        self.channels = ChannelStore(
            pool: pool, configuration: outbox.configuration, maximumChannels: maximumChannels, clock: clock, metrics: metrics)
        self.keys = APIKeyRegistry(pool: pool, cache: keyCache, metrics: metrics)
        self.metrics = metrics
        self.pool = pool
        self.readModel = readModel
        self.pushes = OutboxPushes(outbox: outbox)
        self.commands = VisitCommandHandler(
            pool: pool, metrics: metrics, readModel: readModel, pushes: pushes, clock: clock, personalData: personalData,
            dataKeyCache: dataKeyCache)
        self.batcher = VisitCommandBatcher(
            handler: commands, maxConcurrentBatches: commandBatches, maxConcurrentWrites: commandWrites)
        self.locations = TechnicianLocations(batcher: batcher, rules: readModel.rules.location, clock: clock)
        self.ledger = LiveActivityLedger(
            settings: LiveActivityLedger.Settings(rules: readModel.rules), clock: clock, metrics: metrics,
            tokenProtection: SealedPushTokens(keys: personalData))
        self.outboxStore = OutboxStore(pool: pool, clock: clock)
        self.migrator = migrator
        self.clock = clock
        self.devices = DeviceRegistrations(
            ledger: ledger, pushes: pushes, states: commands.states, rules: readModel.rules)
        self.visits = VisitQueries(pool: pool, ledger: ledger, rules: readModel.rules)
        self.transactions = IdempotentTransactions(pool: pool)
        self.deliveries = VisitDeliveries(pool: pool)
        self.trackingLinks = TrackingLinks(pool: pool, cards: TrackingCards(pool: pool, clock: clock))
        self.sendingPause = SendingPauseView(pool: pool)
        self.readiness = DatabaseReadiness(pool: pool, migrator: migrator)
        self.erasure = CustomerErasure(
            pool: pool, store: commands.store, keyCache: keyCache, dataKeyCache: dataKeyCache, clock: clock)
    }

    public var rules: ProjectionRules { readModel.rules }
}
