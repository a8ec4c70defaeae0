import Synchronization

/// A door code under test waits at until the test opens it: the event a timing-free test orders on.
/// `waiting` says how many are held at it now, `arrivals` how many ever came, so a test can wait (with
/// `eventually`) until the code reached the door before doing what must happen while it is held.
public final class Gate: Sendable {
    private struct State {
        var open = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var arrivals = 0
    }
    private let state = Mutex(State())

    public init() {}

    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let openAlready = state.withLock { s -> Bool in
                s.arrivals += 1
                if s.open { return true }
                s.waiters.append(continuation)
                return false
            }
            if openAlready { continuation.resume() }
        }
    }

    public func open() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    public var isOpen: Bool { state.withLock { $0.open } }
    /// How many are held at the door now.
    public var waiting: Int { state.withLock { $0.waiters.count } }
    /// How many came to the door, held or not.
    public var arrivals: Int { state.withLock { $0.arrivals } }
}
