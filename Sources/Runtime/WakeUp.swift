import Dispatch
import Synchronization

/// A wake-up flag for followers: `signal()` from anywhere, `wait(upTo:)` returns as soon as a signal is
/// pending (consuming it) or the timeout passes. Signals raised while nobody waits are remembered once.
public final class WakeUp: Sendable {
    private struct State {
        var pending = false
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    }
    private let state = Mutex(State())

    public init() {}

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

    /// Waits for a signal for at most `seconds`; true when signalled, false on timeout or cancellation.
    public func wait(upTo seconds: Double) async -> Bool {
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
                if let immediate {
                    continuation.resume(returning: immediate)
                    return
                }
                DispatchQueue.global().asyncAfter(deadline: .now() + max(0, seconds)) { [self] in
                    let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
                    waiter?.resume(returning: false)
                }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: false)
        }
    }
}
