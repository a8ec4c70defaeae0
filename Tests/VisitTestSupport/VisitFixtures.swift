import EventStore
import Foundation
import Outbox
import Postgres
import Runtime
import TestSupport
import VisitCommands
import VisitDomain
import VisitProjections

/// Builds visits through the real command path on a scratch database (for the tests of the command path and
/// of the projections built from it).
public struct VisitFixtures: Sendable {
    /// The scratch database's URL (for a `livevisits` process run against it).
    public let databaseURL: String
    public let pool: PostgresPool
    public let handler: VisitCommandHandler
    public let readModel: VisitReadModel
    public let clock: ManualClock

    public static func make(pushes: any PushEnqueuer = CountingEnqueuer()) async throws -> VisitFixtures {
        try await make { _, _ in pushes }
    }

    /// Lends fixtures as `make(pushes:)` builds them to `body` and closes their pool once `body` has returned
    /// or thrown.
    public static func with<Result>(
        pushes: any PushEnqueuer = CountingEnqueuer(), isolation: isolated (any Actor)? = #isolation,
        _ body: (VisitFixtures) async throws -> Result
    ) async throws -> Result {
        try await withResource({ try await make(pushes: pushes) }, close: { await $0.pool.close() }, body)
    }

    /// Lends fixtures whose pushes go to the real outbox tables (`OutboxPushes`, for tests that count what was
    /// enqueued) to `body` and closes their pool once `body` has returned or thrown.
    public static func withOutboxPushes<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (VisitFixtures) async throws -> Result
    ) async throws -> Result {
        try await withResource(
            { try await make { pool, clock in OutboxPushes(outbox: Outbox(pool: pool, clock: clock)) } },
            close: { await $0.pool.close() }, body)
    }

    private static func make(pushes: (PostgresPool, ManualClock) -> any PushEnqueuer) async throws -> VisitFixtures {
        let (databaseURL, pool) = try await TestDatabase.create(poolSize: 8)
        let rules = try ProjectionRules.load(directory: TestDatabase.projectionsDirectory)
        let readModel = try VisitReadModel(projectionsDirectory: TestDatabase.projectionsDirectory, rules: rules)
        let clock = ManualClock(now: Date().timeIntervalSince1970)
        let handler = VisitCommandHandler(
            store: EventStore(pool: pool, metrics: Metrics()), readModel: readModel, pushes: pushes(pool, clock), clock: clock)
        return VisitFixtures(databaseURL: databaseURL, pool: pool, handler: handler, readModel: readModel, clock: clock)
    }

    public static let dispatcher = VisitCommandContext(actor: EventMetadata(actorRole: "dispatcher", actorSubject: "d-1"))

    /// The dispatcher's command on an existing visit, its event as the API would parse `json`.
    public static func command(_ visit: String, _ json: String) throws -> VisitCommand {
        VisitCommand(
            visitId: visit, event: try VisitEventRequest.parse(Array(json.utf8)), context: dispatcher, isCreation: false)
    }

    public func schedule(_ id: String, customer: String = "c-1", technician: String = "t-1") async throws -> VisitCommandResult {
        try await handler.schedule(booking(id, customer: customer, technician: technician), context: VisitFixtures.dispatcher)
    }

    /// The booking `schedule` makes: Alex at 12 Elm Row, Sam's white van, arriving 10 to 20 minutes from now.
    public func booking(_ id: String, customer: String = "c-1", technician: String = "t-1") throws -> VisitScheduled {
        let start = Int(clock.now()) + 600
        let body = """
            {"visitId": "\(id)", "customerId": "\(customer)",
             "attributes": {"customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"},
             "technician": {"id": "\(technician)", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"},
             "arrivalWindow": {"start": \(start), "end": \(start + 600)}, "kilometresAway": 14.0}
            """
        return try ScheduleVisitRequest.parse(Array(body.utf8)) { id }
    }

    @discardableResult
    public func post(_ id: String, _ json: String) async throws -> VisitCommandResult {
        try await handler.post(
            visitId: id, event: try VisitEventRequest.parse(Array(json.utf8)), context: VisitFixtures.dispatcher)
    }

    /// The read model rows, keyed by visit id.
    public func rows() async throws -> [String: VisitReadModel.Row] {
        try await pool.withConnection { c in
            var out: [String: VisitReadModel.Row] = [:]
            var after: (Int64, Int64)? = nil
            while true {
                let page = try VisitReadModel.list(.init(limit: 500, after: after), on: c)
                for row in page.prefix(500) { out[row.visitId] = row }
                guard page.count > 500, let last = page.prefix(500).last else { break }
                after = (last.scheduledAt, last.booked)
            }
            return out
        }
    }
}

/// Counts push plans (stand-in until a test needs the real outbox tables).
public final class CountingEnqueuer: PushEnqueuer, @unchecked Sendable {
    public init() {}
    // Guarded by `lock`.
    private let lock = NSLock()
    private var plans: [PushPlan] = []
    public func intents(for plans: [PushPlan], state: VisitState) throws -> [PushIntent] {
        lock.withLock { self.plans += plans }
        return []
    }
    public func statements(for intents: [PushIntent]) throws -> [PostgresQuery] { [] }
    public var count: Int { lock.withLock { plans.count } }
    public var all: [PushPlan] { lock.withLock { plans } }
}
