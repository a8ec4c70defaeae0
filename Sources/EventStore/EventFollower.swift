import Foundation
import Postgres
import Runtime

/// Follows the whole log from a stored checkpoint and hands each batch to `handle` inside the transaction
/// that also advances the checkpoint (compare-and-set), so results and checkpoint commit together and a
/// restart resumes exactly where it stopped. Wakes on `wakeUp` (fed by LISTEN) and polls as a fallback.
public struct EventFollower: Service {
    public let name: String
    private let store: EventStore
    private let batchSize: Int
    private let pollInterval: Double
    private let wakeUp: WakeUp
    private let handle: @Sendable (PostgresConnection, [RecordedEvent]) throws -> Void
    private let logger: Logger

    /// - Parameters:
    ///   - name: the checkpoint's name.
    ///   - wakeUp: signalled when events may have been committed (see `PostgresListener`).
    ///   - pollInterval: the longest wait without a wake-up.
    public init(
        name: String, store: EventStore, wakeUp: WakeUp, batchSize: Int = 500, pollInterval: Double = 1.0,
        handle: @escaping @Sendable (PostgresConnection, [RecordedEvent]) throws -> Void
    ) {
        self.name = name
        self.store = store
        self.wakeUp = wakeUp
        self.batchSize = batchSize
        self.pollInterval = pollInterval
        self.handle = handle
        self.logger = Logger(label: "follower", metadata: ["follower": name])
    }

    /// How soon to look again when a step found nothing to read but events are committed behind the
    /// snapshot horizon (an older transaction is still open). No notification announces that the holder
    /// finished, so the follower checks back on its own, starting at 10 ms and backing off to the poll
    /// interval.
    static let horizonRetry = (first: 0.01, longest: 1.0)

    public func run() async throws {
        var failures = 0
        var horizonWait = EventFollower.horizonRetry.first
        while !Task.isCancelled {
            do {
                let (count, held) = try await stepReportingHorizon()
                failures = 0
                if count > 0 {
                    horizonWait = EventFollower.horizonRetry.first
                } else if held {
                    _ = await wakeUp.wait(upTo: min(horizonWait, pollInterval))
                    horizonWait = min(horizonWait * 2, EventFollower.horizonRetry.longest)
                } else {
                    horizonWait = EventFollower.horizonRetry.first
                    _ = await wakeUp.wait(upTo: pollInterval)
                }
            } catch {
                failures += 1
                if failures == 1 || failures % 30 == 0 {
                    logger.warning("follower step failed; retrying", ["error": "\(error)"])
                }
                _ = await wakeUp.wait(upTo: min(pollInterval * Double(failures), 5))
            }
        }
    }

    /// Reads and handles one batch; returns how many events it handled.
    @discardableResult
    public func step() async throws -> Int {
        try await stepReportingHorizon().handled
    }

    /// One step; `held` is true when it handled nothing although events past the checkpoint are committed
    /// or in flight behind the snapshot horizon.
    private func stepReportingHorizon() async throws -> (handled: Int, held: Bool) {
        let name = self.name
        let batchSize = self.batchSize
        let handle = self.handle
        let (handled, held) = try await store.pool.withTransaction { connection -> (Int, Bool) in
            let from = try EventStore.checkpoint(named: name, on: connection)
            let events = try EventStore.readAll(after: from, limit: batchSize, on: connection)
            guard let last = events.last else {
                return (0, try EventStore.hasEventsBehindHorizon(after: from, on: connection))
            }
            try handle(connection, events)
            try EventStore.advanceCheckpoint(named: name, from: from, to: last.checkpoint, on: connection)
            return (events.count, false)
        }
        if handled > 0 {
            Metrics.shared.increment(
                "livevisits_projection_events_total", help: "Events handled by asynchronous followers.",
                labels: ["projection": name], by: Double(handled))
        }
        return (handled, held)
    }
}
