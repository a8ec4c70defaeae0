import EventStore
import PersonalData
import Postgres
import Runtime
import VisitProjections

extension VisitCommandHandler {
    /// A handler over an event store of its own on `pool`, counting appended events in `metrics`.
    public init(
        pool: PostgresPool, metrics: Metrics, readModel: VisitReadModel, pushes: any PushEnqueuer,
        clock: any WallClock = SystemClock(), personalData: PersonalDataKeys? = nil,
        dataKeyCache: PersonalDataKeyCache? = nil
    ) {
        self.init(
            store: EventStore(pool: pool, metrics: metrics), readModel: readModel, pushes: pushes, clock: clock,
            personalData: personalData, dataKeyCache: dataKeyCache)
    }

    /// `command` as a step of a transaction the caller opens (`execute(_:on:)`).
    public func step(_ command: VisitCommand) -> @Sendable (PostgresConnection) throws -> VisitCommandResult {
        { try execute(command, on: $0) }
    }

    /// Counts and announces `count` events the caller's transaction appended and committed (`EventStore`).
    public func eventsCommitted(count: Int) { store.eventsCommitted(count: count) }
}
