import Foundation

/// A clock that only moves when told to. Sleepers wake when `advance` passes their deadline (or when
/// their task is cancelled). `waitForSleepers` lets a test advance only once the code under test waits
/// (optionally: waits for something due within a given time, told apart from longer waits by its deadline).
public final class ManualClock: WallClock {
    private struct Sleeper {
        let id: UInt64
        let deadline: Double
        let continuation: CheckedContinuation<Void, Never>
    }
    private struct Watcher {
        let id: UInt64
        let count: Int
        /// Only sleepers due at most this far from now count; nil: all.
        let dueWithin: Double?
        let continuation: CheckedContinuation<Void, Never>
    }
    private struct State {
        var now: Double
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var watchers: [Watcher] = []

        /// How many sleepers are due at most `dueWithin` from now (nil: all of them).
        func sleeperCount(dueWithin: Double?) -> Int {
            guard let dueWithin else { return sleepers.count }
            return sleepers.count { $0.deadline <= now + dueWithin }
        }

        /// The watchers satisfied now, removed.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            var ready: [CheckedContinuation<Void, Never>] = []
            var left: [Watcher] = []
            for w in watchers {
                if w.count <= sleeperCount(dueWithin: w.dueWithin) {
                    ready.append(w.continuation)
                } else {
                    left.append(w)
                }
            }
            watchers = left
            return ready
        }
    }
    private let state: Lock<State>

    public init(now: Double) { state = Lock(State(now: now)) }

    public func now() -> Double { state.withLock { $0.now } }

    public func sleep(seconds: Double) async throws {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (fireNow, watchers) = state.withLock { s -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if seconds <= 0 || Task.isCancelled { return (true, []) }
                    s.sleepers.append(Sleeper(id: id, deadline: s.now + seconds, continuation: continuation))
                    return (false, s.satisfiedWatchers())
                }
                if fireNow { continuation.resume() }
                for watcher in watchers { watcher.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { s -> Sleeper? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: i)
            }
            sleeper?.continuation.resume()
        }
        try Task.checkCancellation()
    }

    /// How many sleepers are waiting now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Returns once at least `count` sleepers are waiting on this clock (at once if they already are) — with
    /// `dueWithin`, sleepers due at most that many seconds from now; throws `CancellationError` if the task is
    /// cancelled first (a test's time limit).
    public func waitForSleepers(_ count: Int = 1, dueWithin: Double? = nil) async throws {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { s -> Bool in
                    if s.sleeperCount(dueWithin: dueWithin) >= count || Task.isCancelled { return true }
                    s.watchers.append(Watcher(id: id, count: count, dueWithin: dueWithin, continuation: continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let watcher = state.withLock { s -> Watcher? in
                guard let i = s.watchers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.watchers.remove(at: i)
            }
            watcher?.continuation.resume()
        }
        try Task.checkCancellation()
    }

    /// Moves time forward and wakes every sleeper whose deadline has passed.
    public func advance(by seconds: Double) {
        let (due, watchers) = state.withLock { s in
            s.now += seconds
            let now = s.now
            let ready = s.sleepers.filter { $0.deadline <= now }.map(\.continuation)
            s.sleepers.removeAll { $0.deadline <= now }
            // Time moved: sleepers left may now be due within a watcher's bound.
            return (ready, s.satisfiedWatchers())
        }
        for continuation in due { continuation.resume() }
        for watcher in watchers { watcher.resume() }
    }

    /// Sets the time (never backwards).
    public func set(now: Double) {
        let delta = now - self.now()
        if delta > 0 { advance(by: delta) }
    }
}
