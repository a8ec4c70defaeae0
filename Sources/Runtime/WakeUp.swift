/// A wake-up flag for followers: `signal()` from anywhere, `wait(upTo:)` returns as soon as a signal is
/// pending (consuming it) or the timeout passes on the wake-up's clock. Signals raised while nobody
/// waits are remembered once. Give it a `ManualClock` and its timeouts pass only when the test advances.
public final class WakeUp: Sendable {
    private struct State {
        var pending = false
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    }
    private let state = Lock(State())
    /// Where the timeouts of `wait(upTo:)` run.
    public let clock: any WallClock

    public init(clock: any WallClock = SystemClock()) {
        self.clock = clock
    }

    /// Wakes every waiter (or the next one to wait).
    public func signal() {
        let waiters = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            if s.waiters.isEmpty {
                s.pending = true
                return []
            }
            let w = Array(s.waiters.values)
            s.waiters = [:]
            return w
        }
        for w in waiters { w.resume(returning: true) }
    }

    /// Wakes one waiter (or the next one to wait): when one follower is enough for the work signalled.
    public func signalOne() {
        let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            guard let id = s.waiters.keys.min() else {
                s.pending = true
                return nil
            }
            return s.waiters.removeValue(forKey: id)
        }
        waiter?.resume(returning: true)
    }

    /// How many wait for a signal now (what a test waits on before signalling).
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// Takes a pending signal without waiting (true when there was one): for a follower about to look for the
    /// work itself, so that a signal for work it will see anyway does not wake it once more afterwards.
    @discardableResult
    public func consume() -> Bool {
        state.withLock { s in
            defer { s.pending = false }
            return s.pending
        }
    }

    /// Waits for a signal for at most `seconds` of the clock's time; true when signalled, false on
    /// timeout or cancellation. The timeout is a sleep on the clock raced against the signal; a signal
    /// that lands as the timeout fires still counts.
    public func wait(upTo seconds: Double) async -> Bool {
        let clock = self.clock
        return await withTaskGroup(of: Bool?.self) { group in
            group.addTask { await self.signalled() }
            group.addTask {
                do { try await clock.sleep(seconds: max(0, seconds)) } catch { return nil }
                return nil
            }
            // The first to finish is the signal or the timeout; the other is cancelled, and a signal
            // that arrived meanwhile is still reported.
            var woken = await group.next() == true
            group.cancelAll()
            for await answer in group where answer == true { woken = true }
            return woken
        }
    }

    /// Until a signal (true) or cancellation (false).
    private func signalled() async -> Bool {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate = state.withLock { s -> Bool? in
                    if s.pending {
                        s.pending = false
                        return true
                    }
                    if Task.isCancelled { return false }
                    s.waiters[id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: false)
        }
    }
}
