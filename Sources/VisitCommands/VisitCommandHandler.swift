import EventStore
import Foundation
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// Where the pushes an accepted event implies go, inside the event's own transaction (the outbox).
public protocol PushEnqueuer: Sendable {
    func enqueue(_ plans: [PushPlan], for state: VisitState, on connection: PostgresConnection) throws
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
}

/// A version precondition that failed (`If-Match`): 409.
public struct VersionMismatch: Error, Sendable, CustomStringConvertible {
    public let expected: Int
    public let actual: Int
    public var description: String { "the visit is at version \(actual), not \(expected)" }
}

/// The write side of a visit: fold its stream, decide, append the event, update the read model and enqueue
/// the pushes — all in one PostgreSQL transaction, so a crash never leaves an event without its read-model
/// row or its outbox rows.
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

    /// The same, on a connection inside the caller's transaction (the HTTP layer stores its idempotent
    /// answer in that transaction too). The caller calls `store.eventsCommitted` after committing.
    public func execute(
        visitId: String, event: VisitEvent, context: VisitCommandContext, isCreation: Bool, on connection: PostgresConnection
    ) throws -> VisitCommandResult {
        let stream = VisitCommandHandler.streamName(for: visitId)
        if let key = context.idempotencyKey, let earlier = try EventStore.previousResult(for: key, on: connection) {
            guard let state = try VisitReadModel.state(visitId: visitId, on: connection) else {
                throw VisitDecisionError(code: .notScheduled, message: "visit \(visitId) does not exist", status: nil, eventType: event.type)
            }
            return VisitCommandResult(state: state, appended: earlier, pushes: 0)
        }
        let history = try EventStore.readStream(stream, on: connection).map {
            StoredVisitEvent(eventType: $0.type, data: Array($0.data.utf8), version: Int($0.position),
                             recordedAt: Int($0.recordedAt.rounded(.down)))
        }
        let state = try VisitDecider.replay(history)
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
        let appended = try EventStore.append(
            AppendRequest(
                streamName: stream,
                events: [NewEvent(type: accepted.recorded.event.eventType,
                                  data: String(decoding: accepted.recorded.event.storedData(), as: UTF8.self),
                                  metadata: context.actor)],
                expectedVersion: state.map { .exactly(Int64($0.version)) } ?? .noStream,
                idempotencyKey: context.idempotencyKey, recordedAt: Double(accepted.recorded.recordedAt)),
            on: connection, limits: store.limits)
        try readModel.upsert([accepted.state], on: connection)
        try pushes.enqueue(accepted.pushes, for: accepted.state, on: connection)
        return VisitCommandResult(state: accepted.state, appended: appended, pushes: accepted.pushes.count)
    }

    private func execute(visitId: String, event: VisitEvent, context: VisitCommandContext, isCreation: Bool) async throws
        -> VisitCommandResult
    {
        // Without If-Match a lost race is retried on the new state; with it, the conflict is the answer.
        var attempt = 0
        while true {
            attempt += 1
            do {
                let result = try await store.pool.withTransaction { connection in
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
