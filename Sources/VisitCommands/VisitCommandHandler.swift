import EventStore
import Foundation
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// Where the pushes an accepted event implies go: statements that write them to the outbox, run in the
/// event's own transaction (in the same round trip as the event and the read-model row).
public protocol PushEnqueuer: Sendable {
    func statements(for plans: [PushPlan], state: VisitState) throws -> [PostgresQuery]
    /// Called after the transaction that enqueued committed (wake the workers).
    func committed()
}

extension PushEnqueuer {
    public func committed() {}
}

/// Who is asking and under which conditions.
public struct VisitCommandContext: Sendable {
    public var actor: EventMetadata
    /// `If-Match`: the version the visit must be at.
    public var expectedVersion: Int?
    /// Store-level idempotency key (the HTTP layer keeps its own, scoped per API key and route).
    public var idempotencyKey: String?
    /// Checked inside the transaction against the folded state (a technician may only touch their visits).
    public var authorize: @Sendable (VisitState) throws -> Void

    public init(
        actor: EventMetadata, expectedVersion: Int? = nil, idempotencyKey: String? = nil,
        authorize: @escaping @Sendable (VisitState) throws -> Void = { _ in }
    ) {
        self.actor = actor
        self.expectedVersion = expectedVersion
        self.idempotencyKey = idempotencyKey
        self.authorize = authorize
    }
}

/// What a command did.
public struct VisitCommandResult: Sendable {
    public let state: VisitState
    public let appended: AppendResult
    public let pushes: Int
    /// The visit's view text after the command (`VisitReadModel.body(view:liveActivities:)` makes it a
    /// response body).
    public let view: String
    /// The rows of the `alsoRun` statements, in order.
    public let alsoRows: [PostgresRows]
}

/// A version precondition that failed (`If-Match`): 409.
public struct VersionMismatch: Error, Sendable, CustomStringConvertible {
    public let expected: Int
    public let actual: Int
    public var description: String { "the visit is at version \(actual), not \(expected)" }
}

/// The write side of a visit: read its state, decide, then append the event, update the read model and
/// enqueue the pushes in one transaction, so a crash never leaves an event without its read-model row or
/// its outbox rows.
///
/// Two round trips: one statement reads the folded state kept in the read model (`visits.state`) and the
/// stream's version — when they differ (the row is behind the stream), the stream is folded instead —
/// and one pipeline writes the event (at the next position, so a concurrent writer makes it fail on the
/// unique index), the read-model row and the outbox rows. Outside a transaction that pipeline is its own
/// transaction; inside the caller's, it is part of it.
public struct VisitCommandHandler: Sendable {
    public let store: EventStore
    public let readModel: VisitReadModel
    public let pushes: any PushEnqueuer
    public let clock: any WallClock

    public init(store: EventStore, readModel: VisitReadModel, pushes: any PushEnqueuer, clock: any WallClock = SystemClock()) {
        self.store = store
        self.readModel = readModel
        self.pushes = pushes
        self.clock = clock
    }

    public static func streamName(for visitId: String) -> String { "visit-\(visitId)" }

    /// Schedules a visit (its first event). `already_scheduled` (409) when the id exists.
    public func schedule(_ scheduled: VisitScheduled, context: VisitCommandContext) async throws -> VisitCommandResult {
        try await execute(visitId: scheduled.attributes.visitId, event: .scheduled(scheduled), context: context, isCreation: true)
    }

    /// Appends one event to an existing visit.
    public func post(visitId: String, event: VisitEvent, context: VisitCommandContext) async throws -> VisitCommandResult {
        try await execute(visitId: visitId, event: event, context: context, isCreation: false)
    }

    /// The same on a connection: by itself (its writes are then one implicit transaction), or inside the
    /// caller's transaction (the HTTP layer stores its idempotent answer in it too). `alsoRun` statements
    /// run after the writes in the same round trip and transaction; their rows come back in `alsoRows`.
    /// The caller calls `store.eventsCommitted` and `pushes.committed()` after the commit.
    public func execute(
        visitId: String, event: VisitEvent, context: VisitCommandContext, isCreation: Bool,
        alsoRun: [PostgresQuery] = [], on connection: PostgresConnection
    ) throws -> VisitCommandResult {
        let stream = VisitCommandHandler.streamName(for: visitId)
        if let key = context.idempotencyKey, let earlier = try EventStore.previousResult(for: key, on: connection) {
            return try deduplicated(earlier, visitId: visitId, event: event, alsoRun: alsoRun, on: connection)
        }
        let state = try currentState(visitId: visitId, stream: stream, on: connection)
        if let state { try context.authorize(state) }
        if let expected = context.expectedVersion, expected != (state?.version ?? 0) {
            throw VersionMismatch(expected: expected, actual: state?.version ?? 0)
        }
        if isCreation == false && state == nil {
            throw VisitDecisionError(code: .notScheduled, message: "visit \(visitId) does not exist", status: nil, eventType: event.type)
        }
        let now = Int(clock.epochSeconds())
        // Timestamps never go backwards within a visit even if this clock is behind the last event.
        let recordedAt = max(now, state?.lastRecordedAt ?? now)
        let accepted = try VisitDecider.accept(event, given: state, recordedAt: recordedAt, rules: readModel.rules)
        let request = AppendRequest(
            streamName: stream,
            events: [NewEvent(type: accepted.recorded.event.eventType,
                              data: String(decoding: accepted.recorded.event.storedData(), as: UTF8.self),
                              metadata: context.actor)],
            expectedVersion: state.map { .exactly(Int64($0.version)) } ?? .noStream,
            idempotencyKey: context.idempotencyKey, recordedAt: Double(accepted.recorded.recordedAt))
        try EventStore.validate(request, limits: store.limits)
        let encoded = readModel.encode([accepted.state])
        var statements = [EventStore.appendStatement(request, guarded: false), readModel.upsertStatement(encoded)]
        statements += try pushes.statements(for: accepted.pushes, state: accepted.state)
        let firstExtra = statements.count
        statements += alsoRun
        let results: [PostgresRows]
        do {
            results = try connection.pipeline(statements)
        } catch let error as PostgresError {
            switch try EventStore.appendFailure(error, request, on: connection) {
            case .success(let earlier):
                // A concurrent command with the same key won the race.
                return try deduplicated(earlier, visitId: visitId, event: event, alsoRun: alsoRun, on: connection)
            case .failure(let failure):
                throw failure
            }
        }
        return VisitCommandResult(
            state: accepted.state, appended: try EventStore.appendResult(request, results[0], on: connection),
            pushes: accepted.pushes.count, view: encoded.views[0], alsoRows: Array(results[firstExtra...]))
    }

    /// The visit's state before a command: the snapshot in the read model when it is at the stream's
    /// version (one statement reads both), else the stream folded.
    func currentState(visitId: String, stream: String, on connection: PostgresConnection) throws -> VisitState? {
        let row = try connection.query("""
            SELECT (SELECT state::text FROM visits WHERE visit_id = \(visitId)) AS state,
                   (SELECT COALESCE(max(position), 0) FROM events WHERE stream_name = \(stream)) AS version
            """).first
        let version = try row?.int("version") ?? 0
        if let text = row?["state"], let snapshot = try? VisitState(snapshot: Array(text.utf8)), snapshot.version == version {
            return snapshot
        }
        if version == 0 { return nil }
        let history = try EventStore.readStream(stream, on: connection).map {
            StoredVisitEvent(eventType: $0.type, data: Array($0.data.utf8), version: Int($0.position),
                             recordedAt: Int($0.recordedAt.rounded(.down)))
        }
        return try VisitDecider.replay(history)
    }

    /// The answer to a command whose idempotency key was already used: the visit as it is now.
    private func deduplicated(
        _ earlier: AppendResult, visitId: String, event: VisitEvent, alsoRun: [PostgresQuery], on connection: PostgresConnection
    ) throws -> VisitCommandResult {
        guard let state = try VisitReadModel.state(visitId: visitId, on: connection) else {
            throw VisitDecisionError(code: .notScheduled, message: "visit \(visitId) does not exist", status: nil, eventType: event.type)
        }
        return VisitCommandResult(
            state: state, appended: earlier, pushes: 0, view: readModel.viewText(for: state),
            alsoRows: try connection.pipeline(alsoRun))
    }

    private func execute(visitId: String, event: VisitEvent, context: VisitCommandContext, isCreation: Bool) async throws
        -> VisitCommandResult
    {
        // Without If-Match a lost race is retried on the new state; with it, the conflict is the answer.
        var attempt = 0
        while true {
            attempt += 1
            do {
                let result = try await store.pool.withConnection { connection in
                    try execute(visitId: visitId, event: event, context: context, isCreation: isCreation, on: connection)
                }
                if !result.appended.deduplicated {
                    store.eventsCommitted(count: 1)
                    if result.pushes > 0 { pushes.committed() }
                }
                return result
            } catch let error as EventStoreError where error.code == .wrongExpectedVersion {
                if context.expectedVersion != nil {
                    throw VersionMismatch(expected: context.expectedVersion!, actual: Int(error.actualVersion ?? 0))
                }
                if isCreation {
                    throw VisitDecisionError(
                        code: .alreadyScheduled, message: "visit \(visitId) is already scheduled", status: nil, eventType: .scheduled)
                }
                if attempt >= 50 { throw error }
                // Spread racing retries out a little (a few ms, growing) so they stop colliding.
                try await Task.sleep(nanoseconds: UInt64.random(in: 0...UInt64(min(attempt, 10)) * 2_000_000))
            } catch let error as PostgresError where error.isUnavailable {
                throw EventStoreError(code: .unavailable, message: error.message, underlying: error)
            }
        }
    }
}
