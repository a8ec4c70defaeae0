import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A long-running part of the process (HTTP server, outbox worker, projection follower, APNs client).
/// `run()` returns when the service has shut down; cancellation of the calling task asks it to stop
/// gracefully: stop taking work, finish or release what is held, commit checkpoints, return.
public protocol Service: Sendable {
    var name: String { get }
    func run() async throws
}

/// Runs services together and stops them in order.
///
/// Services come in stages, in start order: a stage may use the ones before it (the outbox worker sends
/// through the APNs client of an earlier stage). SIGTERM/SIGINT, the group's own task being cancelled, or
/// any service ending starts the shutdown: the last stage is asked to stop first (its tasks are cancelled)
/// and the group waits until every service of it has returned, then the stage before it, and so on. So
/// the HTTP server stops accepting and the worker stops claiming while the APNs client still carries the
/// sends already on the wire; the client closes only after them. Resources the services share (the
/// database pool) are lent around `run()` by the caller and closed after it returns.
public struct ServiceGroup: Sendable {
    /// Start order; shutdown runs backwards.
    public let stages: [[any Service]]
    public let logger: Logger
    private let signals: SignalWatcher?

    /// - Parameter signals: the termination signals to obey; nil for a group that stops only when its task
    ///   is cancelled or a service ends (tests, which must not take the process's signals).
    public init(stages: [[any Service]], logger: Logger = Logger(label: "livevisits"), signals: SignalWatcher? = .shared) {
        self.stages = stages
        self.logger = logger
        self.signals = signals
    }

    /// One stage: every service stops at once.
    public init(services: [any Service], logger: Logger = Logger(label: "livevisits"), signals: SignalWatcher? = .shared) {
        self.init(stages: [services], logger: logger, signals: signals)
    }

    /// Runs every service until a termination signal, cancellation or one of them ending, then stops the
    /// stages last to first. Rethrows the error of a service that failed on its own (after the shutdown).
    public func run() async throws {
        let trigger = ShutdownTrigger()
        // Unstructured on purpose: each stage is cancelled on its own, in order, which a task group's
        // children cannot be. Every task is awaited below before `run()` returns.
        let running: [[(name: String, task: Task<Void, any Error>)]] = stages.map { stage in
            stage.map { service in
                (
                    service.name,
                    Task {
                        do {
                            try await service.run()
                            trigger.fire(.ended(service.name))
                        } catch {
                            trigger.fire(.failed(service.name, error))
                            throw error
                        }
                    }
                )
            }
        }
        let watcher = signals.map { signals in
            Task {
                let signal = await signals.next()
                if signal != 0 { trigger.fire(.signal(signal)) }
            }
        }
        let cause = await withTaskCancellationHandler {
            await trigger.wait()
        } onCancel: {
            trigger.fire(.cancelled)
        }
        watcher?.cancel()
        switch cause {
        case .signal(let signal): logger.info("shutting down", ["signal": String(signal)])
        case .ended(let name): logger.info("a service ended; shutting down", ["service": name])
        case .failed(let name, let error):
            logger.error("a service failed; shutting down", ["service": name, "error": "\(error)"])
        case .cancelled: logger.info("shutting down")
        }
        for stage in running.reversed() {
            for service in stage { service.task.cancel() }
            for service in stage {
                do {
                    try await service.task.value
                } catch is CancellationError {
                } catch {
                    if case .failed(let name, _) = cause, name == service.name { continue }
                    logger.warning("a service failed while stopping", ["service": service.name, "error": "\(error)"])
                }
            }
        }
        if case .failed(_, let error) = cause, !(error is CancellationError) { throw error }
    }
}

/// Why a service group shuts down; the first cause wins.
enum ShutdownCause: Sendable {
    case signal(Int32)
    case ended(String)
    case failed(String, any Error)
    case cancelled
}

/// A latch: the first `fire` wakes every waiter, later ones are ignored.
final class ShutdownTrigger: Sendable {
    private struct State {
        var cause: ShutdownCause?
        var waiters: [CheckedContinuation<ShutdownCause, Never>] = []
    }
    private let state = Lock(State())

    func fire(_ cause: ShutdownCause) {
        let waiters = state.withLock { s -> [CheckedContinuation<ShutdownCause, Never>] in
            guard s.cause == nil else { return [] }
            s.cause = cause
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume(returning: cause) }
    }

    func wait() async -> ShutdownCause {
        await withCheckedContinuation { continuation in
            let fired = state.withLock { s -> ShutdownCause? in
                if let cause = s.cause { return cause }
                s.waiters.append(continuation)
                return nil
            }
            if let fired { continuation.resume(returning: fired) }
        }
    }
}

/// Turns SIGTERM and SIGINT into an async wake-up.
public final class SignalWatcher: Sendable {
    public static let shared = SignalWatcher()

    private struct State {
        var received: Int32?
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Int32, Never>] = [:]
    }
    private let state = Lock<State>(State())
    // Written once in init, never touched again: kept only so the sources stay alive.
    nonisolated(unsafe) private let sources: [DispatchSourceSignal]

    private init() {
        let queue = DispatchQueue(label: "livevisits.signals")
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { SignalWatcher.shared.deliver(sig) }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    private func deliver(_ sig: Int32) {
        let waiters = state.withLock { s -> [CheckedContinuation<Int32, Never>] in
            s.received = sig
            let w = Array(s.waiters.values)
            s.waiters = [:]
            return w
        }
        for w in waiters { w.resume(returning: sig) }
    }

    /// Waits for the next termination signal (returns at once if one already arrived).
    /// Returns 0 when the waiting task is cancelled.
    public func next() async -> Int32 {
        let id = state.withLock { s -> Int in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate = state.withLock { s -> Int32? in
                    if let r = s.received { return r }
                    if Task.isCancelled { return 0 }
                    s.waiters[id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: 0)
        }
    }
}
