import Postgres
import Synchronization

/// Group commit's shell: concurrent `EventStore.append(_:)` calls wait in an `AppendBatchQueue` (under a
/// `Mutex`), and each batch the queue hands out runs as one statement (one round trip, autocommitted when
/// every append is a single event without an idempotency key) or one transaction, on a pooled connection's
/// own thread. Each append gets its own result; a conflict fails only its append.
///
/// When a batch fails for a reason other than the database being unavailable (say, one append's data is
/// not valid JSON and PostgreSQL refuses the statement), the appends it had not settled are retried one by
/// one on the direct path, so one bad append cannot fail its neighbours.
final class AppendBatcher: Sendable {
    private struct Entry: Sendable {
        let request: AppendRequest
        let continuation: CheckedContinuation<AppendResult, any Error>
    }

    private let pool: PostgresPool
    private let queue: Mutex<AppendBatchQueue<Entry>>
    private let direct: @Sendable (AppendRequest) async throws -> AppendResult
    private let committed: @Sendable (Int) -> Void

    /// - Parameters:
    ///   - direct: appends one request in its own transaction (the fallback), reporting its own commit.
    ///   - committed: told how many events a batch committed, once per batch.
    init(
        pool: PostgresPool, configuration: GroupCommit,
        direct: @escaping @Sendable (AppendRequest) async throws -> AppendResult,
        committed: @escaping @Sendable (Int) -> Void
    ) {
        self.pool = pool
        self.queue = Mutex(AppendBatchQueue(configuration: configuration))
        self.direct = direct
        self.committed = committed
    }

    /// Appends a validated request as part of the next batch.
    func append(_ request: AppendRequest) async throws -> AppendResult {
        try await withCheckedThrowingContinuation { continuation in
            let batch = queue.withLock { $0.enqueue(Entry(request: request, continuation: continuation), events: request.events.count) }
            if let batch { start(batch) }
        }
    }

    /// Runs `batch`, then whatever queued meanwhile, on one task until the queue is empty.
    private func start(_ batch: [Entry]) {
        Task.detached { [self] in
            var next: [Entry]? = batch
            while let batch = next {
                await run(batch)
                next = queue.withLock { $0.batchFinished() }
            }
        }
    }

    private func run(_ batch: [Entry]) async {
        let requests = batch.map(\.request)
        let autocommit = EventStore.canAutocommit(requests)
        var slots: [EventStore.BatchSlot]
        var failure: (any Error)?
        do {
            slots = try await pool.withConnection { connection in
                if autocommit { return try EventStore.appendBatch(requests, on: connection, autocommit: true) }
                return try connection.transaction { try EventStore.appendBatch(requests, on: $0, autocommit: false) }
            }
        } catch let stopped as EventStore.BatchStopped {
            // Autocommitted rounds before the failure stand; a transaction's work was rolled back.
            slots = autocommit ? stopped.settled : Array(repeating: nil, count: batch.count)
            failure = stopped.error
        } catch {
            slots = Array(repeating: nil, count: batch.count)
            failure = error
        }

        var appended = 0
        var unsettled: [Entry] = []
        for (entry, slot) in zip(batch, slots) {
            switch slot {
            case .success(let result)?:
                if !result.deduplicated { appended += result.globalPositions.count }
                entry.continuation.resume(returning: result)
            case .failure(let error)?:
                entry.continuation.resume(throwing: error)
            case nil:
                unsettled.append(entry)
            }
        }
        if appended > 0 { committed(appended) }
        guard !unsettled.isEmpty else { return }

        if let failure, let pg = failure as? PostgresError, pg.isUnavailable {
            let error = EventStoreError.wrap(pg)
            for entry in unsettled { entry.continuation.resume(throwing: error) }
            return
        }
        // Isolate whatever stopped the batch: each remaining append alone, in its own transaction.
        for entry in unsettled {
            do {
                entry.continuation.resume(returning: try await direct(entry.request))
            } catch {
                entry.continuation.resume(throwing: error)
            }
        }
    }
}
