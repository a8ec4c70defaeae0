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

    public func run() async throws {
        var failures = 0
        while !Task.isCancelled {
            do {
                let count = try await step()
                failures = 0
                if count == 0 { _ = await wakeUp.wait(upTo: pollInterval) }
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
        let name = self.name
        let batchSize = self.batchSize
        let handle = self.handle
        let handled = try await store.pool.withTransaction { connection -> Int in
            let from = try EventStore.checkpoint(named: name, on: connection)
            let events = try EventStore.readAll(after: from, limit: batchSize, on: connection)
            guard let last = events.last else { return 0 }
            try handle(connection, events)
            try EventStore.advanceCheckpoint(named: name, from: from, to: last.checkpoint, on: connection)
            return events.count
        }
        if handled > 0 {
            Metrics.shared.increment(
                "livevisits_projection_events_total", help: "Events handled by asynchronous followers.",
                labels: ["projection": name], by: Double(handled))
        }
        return handled
    }
}
