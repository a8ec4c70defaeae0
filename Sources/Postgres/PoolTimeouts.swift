import Dispatch
import Runtime

/// The deadlines of one pool — each lent connection's work timeout and each waiter's acquire timeout —
/// looked for by one timer that ticks while any is set, instead of a dispatch timer each. A pool lends
/// connections thousands of times a second under load, and a timer per lend kept the dispatch manager
/// thread busy resifting its heap (five per cent of `serve`'s CPU) and woke a thread for every one of them
/// when it came due, its work long done. The price is the tick: a deadline is acted on up to `tick` late.
final class PoolTimeouts: Sendable {
    /// How often due deadlines are looked for while any is set.
    let tick: Double

    private struct Entry {
        let due: UInt64
        let fire: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 0
        var timer: (any DispatchSourceTimer)?
    }

    private let state = Lock(State())

    init(tick: Double = 0.05) {
        self.tick = tick
    }

    /// Sets a deadline `seconds` from now: `fire` runs once then (on a dispatch thread, up to `tick` late)
    /// unless `remove` takes it out first. Returns its id.
    func add(after seconds: Double, _ fire: @escaping @Sendable () -> Void) -> UInt64 {
        let due = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, seconds) * 1e9)
        return state.withLock { s in
            s.nextID += 1
            s.entries[s.nextID] = Entry(due: due, fire: fire)
            if s.timer == nil {
                let timer = DispatchSource.makeTimerSource(queue: .global())
                timer.schedule(
                    deadline: .now() + tick, repeating: tick, leeway: .nanoseconds(Int(tick * 1e9 / 2)))
                timer.setEventHandler { [weak self] in self?.fireDue() }
                timer.resume()
                s.timer = timer
            }
            return s.nextID
        }
    }

    /// Takes a deadline out before it fires; false when it has fired already (or was never set).
    @discardableResult
    func remove(_ id: UInt64) -> Bool {
        state.withLock { $0.entries.removeValue(forKey: id) != nil }
    }

    /// Deadlines set now (for tests).
    var count: Int { state.withLock { $0.entries.count } }

    /// Whether the timer runs now (for tests: it stops once no deadline is left).
    var ticking: Bool { state.withLock { $0.timer != nil } }

    /// One tick: takes out what is due and runs it, outside the lock; stops the timer when nothing is left.
    private func fireDue() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { s -> [Entry] in
            let due = s.entries.filter { $0.value.due <= now }
            for id in due.keys { s.entries.removeValue(forKey: id) }
            if s.entries.isEmpty {
                s.timer?.cancel()
                s.timer = nil
            }
            return Array(due.values)
        }
        for entry in due { entry.fire() }
    }

    deinit {
        state.withLock { $0.timer?.cancel() }
    }
}
