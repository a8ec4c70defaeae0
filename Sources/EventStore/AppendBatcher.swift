import Dispatch
import Foundation
import Postgres
import Runtime
import Synchronization

/// Group commit's shell: concurrent `EventStore.append(_:)` calls wait in an `AppendBatchQueue` (under a
/// `Mutex`), and batch workers take them as batches. Each worker is a thread of its own with a database
/// connection of its own (started on first use, stopped after `idleSeconds` without work), so a batch
/// costs one hop from the appending task to the worker and one back — no pool slot, no extra task — and
/// blocking libpq calls never run on Swift's cooperative pool. These connections come on top of the pool's.
///
/// A batch runs as one statement (one round trip, autocommitted, when every append is a single event
/// without an idempotency key on a distinct stream) or as one transaction. Each append gets its own
/// result; a conflict fails only its append. When a batch fails for a reason other than the database being
/// unavailable (say, one append's data is not valid JSON and PostgreSQL refuses the statement), the appends
/// it had not settled are retried one by one, each by itself, so one bad append cannot fail
/// its neighbours.
final class AppendBatcher: Sendable {
    private struct Entry: Sendable {
        let request: AppendRequest
        let continuation: CheckedContinuation<AppendResult, any Error>
    }

    private let configuration: PostgresConfiguration
    private let limits: EventStoreLimits
    private let queue: Mutex<AppendBatchQueue<Entry>>
    private let signals: [DispatchSemaphore]
    private let committed: @Sendable (Int) -> Void
    private let logger = Logger(label: "eventstore.batcher")
    /// How long a worker waits for work before its thread ends and its connection closes.
    static let idleSeconds = 10.0

    /// - Parameter committed: told how many events a batch committed, once per batch.
    init(
        configuration: PostgresConfiguration, limits: EventStoreLimits, groupCommit: GroupCommit,
        committed: @escaping @Sendable (Int) -> Void
    ) {
        self.configuration = configuration
        self.limits = limits
        self.queue = Mutex(AppendBatchQueue(configuration: groupCommit))
        self.signals = (0..<groupCommit.maxConcurrentBatches).map { _ in DispatchSemaphore(value: 0) }
        self.committed = committed
    }

    /// Appends a validated request as part of the next batch.
    func append(_ request: AppendRequest) async throws -> AppendResult {
        try await withCheckedThrowingContinuation { continuation in
            let wake = queue.withLock {
                $0.enqueue(
                    Entry(request: request, continuation: continuation), events: request.events.count,
                    exclusive: ["s:" + request.streamName] + (request.idempotencyKey.map { ["k:" + $0] } ?? []))
            }
            switch wake {
            case .none: break
            case .signal(let worker): signals[worker].signal()
            case .start(let worker): startWorker(worker)
            }
        }
    }

    private func startWorker(_ worker: Int) {
        let thread = Thread { [self] in work(worker) }
        thread.name = "livevisits.append-batch.\(worker)"
        thread.start()
    }

    /// A worker's life: take a batch, run it, repeat; park when there is nothing; end after idling.
    private func work(_ worker: Int) {
        let owner = ConnectionOwner()
        while true {
            if let batch = queue.withLock({ $0.next(worker: worker) }) {
                run(batch, owner: owner)
                continue
            }
            if signals[worker].wait(timeout: .now() + AppendBatcher.idleSeconds) == .timedOut,
                queue.withLock({ $0.idleTimedOut(worker: worker) })
            {
                return
            }
        }
    }

    private func run(_ batch: [Entry], owner: ConnectionOwner) {
        let started = DispatchTime.now().uptimeNanoseconds
        defer {
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            AppendBatcher.record(appends: batch.count, seconds: seconds)
        }
        if batch.count == 1 {
            // Nobody to share the commit with: the plain statements cost the database less than the batch's.
            runAlone(batch[0], owner: owner)
            return
        }
        let requests = batch.map(\.request)
        let autocommit = EventStore.canAutocommit(requests)
        var slots = [EventStore.BatchSlot](repeating: nil, count: batch.count)
        var failure: (any Error)?
        do {
            let connection = try owner.connection(configuration)
            if autocommit {
                slots = try EventStore.appendBatch(requests, on: connection, autocommit: true)
            } else {
                slots = try connection.transaction { try EventStore.appendBatch(requests, on: $0, autocommit: false) }
            }
        } catch let stopped as EventStore.BatchStopped {
            // Autocommitted rounds before the failure stand; a transaction's work was rolled back.
            if autocommit { slots = stopped.settled }
            failure = stopped.error
        } catch {
            failure = error
        }
        if failure != nil { owner.dropIfBroken() }

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
        if let failure, let pg = failure as? PostgresError, pg.isUnavailable || !owner.isHealthy {
            let error = EventStoreError.wrap(pg.isUnavailable ? pg : PostgresError(code: .unavailable, message: pg.message))
            for entry in unsettled { entry.continuation.resume(throwing: error) }
            return
        }
        if let failure { logger.info("batch refused; appending its entries one by one", ["error": "\(failure)"]) }
        // Isolate whatever stopped the batch: each remaining append alone, in its own transaction.
        for entry in unsettled { runAlone(entry, owner: owner) }
    }

    /// One append, one autocommitted statement (the direct path's) on the worker's connection.
    private func runAlone(_ entry: Entry, owner: ConnectionOwner) {
        do {
            let connection = try owner.connection(configuration)
            let limits = self.limits
            let result = try EventStore.append(entry.request, on: connection, limits: limits)
            if !result.deduplicated { committed(result.globalPositions.count) }
            entry.continuation.resume(returning: result)
        } catch {
            owner.dropIfBroken()
            entry.continuation.resume(throwing: EventStoreError.wrap(error))
        }
    }

    /// Batch size and time, for `/metrics` and the benchmark (mean batch size = appends / batches).
    static func record(appends: Int, seconds: Double) {
        let metrics = Metrics.shared
        metrics.increment("livevisits_append_batches_total", help: "Group-commit batches run.")
        metrics.increment(
            "livevisits_append_batched_appends_total", help: "Appends that went through group commit.", by: Double(appends))
        metrics.increment(
            "livevisits_append_batch_seconds_total", help: "Time spent running group-commit batches.", by: seconds)
    }

    /// The worker's connection, opened on first use and replaced after it breaks.
    private final class ConnectionOwner {
        // Used only by the worker thread that created it.
        private var current: PostgresConnection?

        func connection(_ configuration: PostgresConfiguration) throws -> PostgresConnection {
            if let current, current.isHealthy { return current }
            current = nil
            let fresh = try PostgresConnection(
                url: configuration.url, connectTimeoutSeconds: configuration.connectTimeoutSeconds,
                usePreparedStatements: configuration.usePreparedStatements)
            current = fresh
            return fresh
        }

        var isHealthy: Bool { current?.isHealthy ?? false }

        func dropIfBroken() {
            if let current, !current.isHealthy { self.current = nil }
        }
    }
}
