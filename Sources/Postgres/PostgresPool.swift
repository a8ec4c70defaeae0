import Dispatch
import Foundation
import Runtime

/// Settings for a pool.
public struct PostgresConfiguration: Sendable {
    /// A libpq connection string or URI (`LIVEVISITS_DATABASE_URL`).
    public var url: String
    /// Upper bound of open connections.
    public var size: Int
    /// How long a caller waits for a free connection before `.poolTimeout`.
    public var acquireTimeoutSeconds: Double
    /// libpq `connect_timeout`.
    public var connectTimeoutSeconds: Int
    /// Use named prepared statements (turn off behind a transaction-pooling proxy).
    public var usePreparedStatements: Bool
    /// The longest one lent connection's work (`withConnection`'s body) may run: then its statement is
    /// cancelled, the connection dropped and the caller gets `.unavailable`. What it bounds that nothing
    /// else does is a commit waiting for a synchronous standby that is gone (`statement_timeout` ends
    /// before the commit's wait). nil: no bound (replay, migrations, prune, tools).
    public var workTimeoutSeconds: Double?

    public init(
        url: String, size: Int = 8, acquireTimeoutSeconds: Double = 5, connectTimeoutSeconds: Int = 5,
        usePreparedStatements: Bool = true, workTimeoutSeconds: Double? = nil
    ) {
        self.url = url
        self.size = max(1, size)
        self.acquireTimeoutSeconds = acquireTimeoutSeconds
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.usePreparedStatements = usePreparedStatements
        self.workTimeoutSeconds = workTimeoutSeconds
    }

    /// The same pool settings for long work (a rebuild), with no work timeout.
    public var withoutWorkTimeout: PostgresConfiguration {
        var c = self
        c.workTimeoutSeconds = nil
        return c
    }
}

/// A bounded pool of connections, each owned by its own serial dispatch queue (a thread the adapter owns),
/// so blocking libpq calls never run on Swift's cooperative pool. A connection found broken is dropped and
/// replaced on next use, so the pool survives a PostgreSQL restart; while the server is down callers get
/// `.unavailable` at once (connection refused) or `.poolTimeout` after the acquire timeout.
public final class PostgresPool: Sendable {
    public let configuration: PostgresConfiguration

    /// A slot: its queue and the connection only that queue touches.
    private final class Slot: @unchecked Sendable {
        // `connection` is only read and written on `queue` (a serial queue): that is the lock.
        let queue: DispatchQueue
        var connection: PostgresConnection?
        init(index: Int) { queue = DispatchQueue(label: "livevisits.postgres.\(index)") }
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Int, any Error>
        /// Its acquire timeout in `timeouts`.
        let timeout: UInt64
    }

    private struct State {
        var free: [Int]
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
        var closed = false
    }

    private let slots: [Slot]
    private let state: Lock<State>
    private let notifier = PostgresNotifier()
    /// The work and acquire timeouts, looked for by one timer.
    private let timeouts = PoolTimeouts()

    /// Work and acquire deadlines set now (for tests: a finished work's deadline is taken out, so it never fires).
    var deadlinesSet: Int { timeouts.count }

    public init(configuration: PostgresConfiguration) {
        self.configuration = configuration
        slots = (0..<configuration.size).map(Slot.init(index:))
        state = Lock(State(free: Array((0..<configuration.size).reversed())))
    }

    public convenience init(url: String, size: Int = 8) {
        self.init(configuration: PostgresConfiguration(url: url, size: size))
    }

    /// Lends a connection to `body`, which runs on the connection's own thread. A transaction left open
    /// by `body` is rolled back; a connection that broke is replaced on next use.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let index = try await acquire()
        defer { release(index) }
        let slot = slots[index]
        let configuration = self.configuration
        return try await withCheckedThrowingContinuation { continuation in
            slot.queue.async {
                do {
                    if slot.connection.map({ !$0.isHealthy }) ?? true {
                        slot.connection = nil
                        slot.connection = try PostgresConnection(
                            url: configuration.url, connectTimeoutSeconds: configuration.connectTimeoutSeconds,
                            usePreparedStatements: configuration.usePreparedStatements)
                    }
                    let connection = slot.connection!
                    let watchdog = configuration.workTimeoutSeconds.map {
                        WorkWatchdog(connection: connection, seconds: $0, timeouts: self.timeouts)
                    }
                    do {
                        let value = try body(connection)
                        if let watchdog, watchdog.finish() {
                            // Its statement was cancelled: what the work did is unknown to the caller (a
                            // commit cancelled in its wait for a standby is kept locally), so it is not
                            // reported as done, and the connection goes.
                            slot.connection = nil
                            continuation.resume(throwing: PostgresPool.workTimedOut(watchdog.seconds))
                            return
                        }
                        if connection.inTransaction { try? connection.execute(script: "ROLLBACK") }
                        continuation.resume(returning: value)
                    } catch {
                        if let watchdog, watchdog.finish() {
                            slot.connection = nil
                            continuation.resume(throwing: PostgresPool.workTimedOut(watchdog.seconds))
                            return
                        }
                        // A broken connection, or one to a server that turned read-only (a primary
                        // demoted, a standby after a failover): replaced, so that the next use connects
                        // afresh and libpq's target_session_attrs=read-write finds the primary.
                        let readOnly = (error as? PostgresError)?.sqlState == PostgresError.readOnlySQLState
                        if !connection.isHealthy || readOnly {
                            slot.connection = nil
                            PostgresPool.dropped(readOnly: readOnly, error: error)
                            if let pgError = error as? PostgresError, pgError.code == .unavailable {
                                continuation.resume(throwing: pgError)
                            } else {
                                continuation.resume(
                                    throwing: PostgresError(
                                        code: .unavailable, message: "connection to PostgreSQL lost: \(error)"))
                            }
                            return
                        }
                        if connection.inTransaction { try? connection.execute(script: "ROLLBACK") }
                        continuation.resume(throwing: error)
                    }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private static let logger = Logger(label: "postgres.pool")

    /// A lent connection's work ran past `workTimeoutSeconds`: one log line,
    /// `livevisits_database_work_timeouts_total`, and the caller's `.unavailable`.
    private static func workTimedOut(_ seconds: Double) -> PostgresError {
        Metrics.shared.increment(
            "livevisits_database_work_timeouts_total",
            help:
                "Database work cancelled after the pool's work timeout (a commit waiting for a lost synchronous standby, a lock)."
        )
        let message =
            "the database did not finish within \(seconds.formatted()) s; its statement was cancelled "
            + "(a commit waiting for a synchronous standby? see /readyz)"
        logger.warning("database work cancelled at the work timeout; connection dropped", ["postgres.timeout_s": "\(seconds)"])
        return PostgresError(code: .unavailable, message: message)
    }

    /// A dropped connection: one log line and `livevisits_database_connections_dropped_total{reason}`.
    private static func dropped(readOnly: Bool, error: any Error) {
        let reason = readOnly ? "read_only" : "broken"
        Metrics.shared.increment(
            "livevisits_database_connections_dropped_total",
            help: "Pooled connections dropped: broken (server gone) or read_only (a standby or demoted primary).",
            labels: ["reason": reason])
        logger.warning(
            readOnly
                ? "database connection dropped: the server is read-only (a standby or a demoted primary); reconnecting"
                : "database connection dropped: the server went away; reconnecting",
            ["postgres.reason": reason, "error": "\(error)"])
    }

    /// Runs `body` in one transaction on one connection.
    public func withTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await withConnection { connection in try connection.transaction(body) }
    }

    /// Asks for a `NOTIFY` on `channel` after a commit: soon, outside the caller's transaction, and
    /// coalesced with the pool's other pokes on any channel (see `PostgresNotifier`).
    public func notifyAfterCommit(_ channel: String) {
        notifier.poke(channel, through: self)
    }

    /// Runs one statement on any connection.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await withConnection { connection in try connection.query(query) }
    }

    /// Closes every connection; later calls fail with `.unavailable`.
    public func close() async {
        let waiters = state.withLock { s -> [Waiter] in
            s.closed = true
            let w = s.waiters
            s.waiters = []
            return w
        }
        for w in waiters {
            timeouts.remove(w.timeout)
            w.continuation.resume(throwing: PostgresError(code: .unavailable, message: "the connection pool is closed"))
        }
        for slot in slots {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                slot.queue.async {
                    slot.connection = nil
                    c.resume()
                }
            }
        }
    }

    // MARK: slot accounting

    /// A free slot at once, else a place in the queue until one is released, the acquire timeout
    /// passes (`.poolTimeout`), the pool closes (`.unavailable`) or the task is cancelled: a cancelled
    /// waiter leaves the queue and throws `CancellationError` (a slot handed to it just before is taken,
    /// and given back by the caller as usual). A cancelled task still gets a slot that is free at once,
    /// so work that must finish while shutting down (completing a batch) is not refused for it.
    private func acquire() async throws -> Int {
        let ticket: (Int?, UInt64, Bool) = state.withLock { s in
            if s.closed { return (nil, 0, true) }
            if let index = s.free.popLast() { return (index, 0, false) }
            s.nextWaiterID += 1
            return (nil, s.nextWaiterID, false)
        }
        if ticket.2 { throw PostgresError(code: .unavailable, message: "the connection pool is closed") }
        if let index = ticket.0 { return index }
        let id = ticket.1
        let timeout = configuration.acquireTimeoutSeconds
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                enum Outcome { case waiting, closed, cancelled }
                // Set before the waiter is queued, so that whoever takes it out can also take its deadline out.
                let deadline = timeouts.add(after: timeout) { [self] in
                    removeWaiter(id)?.continuation.resume(
                        throwing: PostgresError(
                            code: .poolTimeout, message: "no database connection became free within \(timeout) s"))
                }
                let outcome: Outcome = state.withLock { s in
                    if s.closed { return .closed }
                    if let index = s.free.popLast() {
                        continuation.resume(returning: index)
                        return .waiting
                    }
                    // Checked under the lock: a cancellation after this finds the waiter in the queue.
                    if Task.isCancelled { return .cancelled }
                    s.waiters.append(Waiter(id: id, continuation: continuation, timeout: deadline))
                    return .waiting
                }
                switch outcome {
                case .waiting: break
                case .closed:
                    timeouts.remove(deadline)
                    continuation.resume(throwing: PostgresError(code: .unavailable, message: "the connection pool is closed"))
                case .cancelled:
                    timeouts.remove(deadline)
                    continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            removeWaiter(id)?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Callers waiting for a slot now (for tests).
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Slots free now (for tests).
    var freeCount: Int { state.withLock { $0.free.count } }

    /// Takes a waiter out of the queue, and its deadline, if it is still there (whoever removes it resumes it).
    private func removeWaiter(_ id: UInt64) -> Waiter? {
        let waiter = state.withLock { s -> Waiter? in
            guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return s.waiters.remove(at: i)
        }
        if let waiter { timeouts.remove(waiter.timeout) }
        return waiter
    }

    private func release(_ index: Int) {
        let waiter = state.withLock { s -> Waiter? in
            if !s.waiters.isEmpty { return s.waiters.removeFirst() }
            s.free.append(index)
            return nil
        }
        if let waiter {
            timeouts.remove(waiter.timeout)
            waiter.continuation.resume(returning: index)
        }
    }
}

/// Cancels one lent connection's statement when its work runs past the pool's work timeout. `finish()`
/// (on the connection's thread, after the work) takes its deadline out and says whether it had fired; a
/// deadline taken out never fires, and one that fired has its connection dropped, so a cancel cannot reach
/// the connection's next work.
private struct WorkWatchdog {
    let seconds: Double
    private let timeouts: PoolTimeouts
    private let deadline: UInt64

    init(connection: PostgresConnection, seconds: Double, timeouts: PoolTimeouts) {
        self.seconds = seconds
        self.timeouts = timeouts
        let key = connection.cancelKey
        deadline = timeouts.add(after: seconds) { key?.cancel() }
    }

    /// Marks the work done; true when the deadline had fired (its statement was cancelled).
    func finish() -> Bool { !timeouts.remove(deadline) }
}
