import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A long-running part of the process (HTTP server, outbox worker, projection follower, pool).
/// `run()` returns when the service has shut down; cancellation of the calling task asks it to stop
/// gracefully: stop taking work, finish or release what is held, commit checkpoints, return.
public protocol Service: Sendable {
    var name: String { get }
    func run() async throws
}

/// Runs services together; SIGTERM/SIGINT (or one service failing) cancels them all and waits.
public struct ServiceGroup: Sendable {
    public let services: [any Service]
    public let logger: Logger

    public init(services: [any Service], logger: Logger = Logger(label: "livevisits")) {
        self.services = services
        self.logger = logger
    }

    /// Runs every service until a termination signal arrives or one of them ends.
    public func run() async throws {
        let signals = SignalWatcher.shared
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in services {
                group.addTask {
                    try await service.run()
                }
            }
            group.addTask {
                let signal = await signals.next()
                if signal != 0 { logger.info("shutting down", ["signal": String(signal)]) }
                throw CancellationError()
            }
            defer { group.cancelAll() }
            do {
                // The first to finish (a signal or a service) ends the group.
                try await group.next()
            } catch is CancellationError {
                group.cancelAll()
                while let _ = try? await group.next() {}
                return
            }
            group.cancelAll()
            while let _ = try? await group.next() {}
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
    private let state = Mutex<State>(State())
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
