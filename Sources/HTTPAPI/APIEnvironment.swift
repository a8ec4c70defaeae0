import EventStore
import Foundation
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitCommands
import VisitDomain
import VisitProjections

/// Everything the API's handlers use, built once by the executable. A class: every handler closure captures
/// it, and a reference is one retain where a struct of a dozen references was a dozen per capture.
public final class APIEnvironment: Sendable {
    public let pool: PostgresPool
    public let store: EventStore
    public let readModel: VisitReadModel
    public let commands: VisitCommandHandler
    /// Group commit for commands without an idempotency key.
    public let batcher: VisitCommandBatcher
    public let pushes: OutboxPushes
    public let tokens: TokenRegistry
    public let outboxStore: OutboxStore
    public let migrator: Migrator
    public let clock: any WallClock
    /// Live keys recently read; used once its `listener(url:)` runs (see `APIKeyCache`).
    public let keyCache: APIKeyCache
    /// What `GET /metrics` renders; the event store counts appended events in it.
    public let metrics: Metrics
    /// The fleet's broadcast channels (contract §7).
    public let channels: ChannelStore
    /// APNs' channel management; nil when sending is not configured (`PUT …/channel` answers 503).
    public let channelService: (any ChannelService)?
    /// The customers' data keys: the command path seals the personal fields under them and every answer
    /// is opened with them on its way out (`LiveVisitsAPI.handler()`).
    public let personalData: PersonalDataKeys
    /// Data keys recently read for opening answers; used once its `listener(url:)` runs (see
    /// `PersonalDataKeyCache`).
    public let dataKeyCache: PersonalDataKeyCache

    public init(
        pool: PostgresPool, readModel: VisitReadModel, outbox: Outbox, migrator: Migrator, clock: any WallClock = SystemClock(),
        keyCache: APIKeyCache = APIKeyCache(), metrics: Metrics = .shared,
        personalData: PersonalDataKeys = PersonalDataKeys(current: nil), channelService: (any ChannelService)? = nil,
        maximumChannels: Int = ChannelStore.defaultMaximumChannels, dataKeyCache: PersonalDataKeyCache = PersonalDataKeyCache(),
        commandBatches: Int = VisitCommandBatcher.defaultConcurrentBatches,
        commandWrites: Int = VisitCommandBatcher.defaultConcurrentWrites
    ) {
        self.personalData = personalData
        self.dataKeyCache = dataKeyCache
        self.channelService = channelService
        self.channels = ChannelStore(
            pool: pool, configuration: outbox.configuration, maximumChannels: maximumChannels, clock: clock, metrics: metrics)
        self.keyCache = keyCache
        self.metrics = metrics
        self.pool = pool
        self.store = EventStore(pool: pool, metrics: metrics)
        self.readModel = readModel
        self.pushes = OutboxPushes(outbox: outbox)
        self.commands = VisitCommandHandler(
            store: store, readModel: readModel, pushes: pushes, clock: clock, personalData: personalData)
        self.batcher = VisitCommandBatcher(
            handler: commands, maxConcurrentBatches: commandBatches, maxConcurrentWrites: commandWrites)
        self.tokens = TokenRegistry(clock: clock)
        self.outboxStore = OutboxStore(pool: pool, clock: clock)
        self.migrator = migrator
        self.clock = clock
    }

    public var rules: ProjectionRules { readModel.rules }
}
