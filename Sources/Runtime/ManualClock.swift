import Foundation
import Synchronization

/// A clock that only moves when told to. Sleepers wake when `advance` passes their deadline.
public final class ManualClock: WallClock {
    private struct Sleeper {
        let deadline: Double
        let continuation: CheckedContinuation<Void, Never>
    }
    private struct State {
        var now: Double
        var sleepers: [Sleeper] = []
    }
    private let state: Mutex<State>

    public init(now: Double) { state = Mutex(State(now: now)) }

    public func now() -> Double { state.withLock { $0.now } }

    public func sleep(seconds: Double) async throws {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fireNow: Bool = state.withLock { s in
                if seconds <= 0 { return true }
                s.sleepers.append(Sleeper(deadline: s.now + seconds, continuation: continuation))
                return false
            }
            if fireNow { continuation.resume() }
        }
        try Task.checkCancellation()
    }

    /// Moves time forward and wakes every sleeper whose deadline has passed.
    public func advance(by seconds: Double) {
        let due: [CheckedContinuation<Void, Never>] = state.withLock { s in
            s.now += seconds
            let now = s.now
            let ready = s.sleepers.filter { $0.deadline <= now }.map(\.continuation)
            s.sleepers.removeAll { $0.deadline <= now }
            return ready
        }
        for continuation in due { continuation.resume() }
    }

    /// Sets the time (never backwards).
    public func set(now: Double) {
        let delta = now - self.now()
        if delta > 0 { advance(by: delta) }
    }
}
