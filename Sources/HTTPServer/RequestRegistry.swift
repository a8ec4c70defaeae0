import Runtime

/// The server's lifecycle and its in-flight requests, as one state machine behind one lock.
/// Callers act (resume a connection, cancel a task) after the lock is released, on what it returns.
///
/// Phases: `idle` → `running` → `draining` (shutdown began: no new connections, in-flight requests
/// finish, responses say `Connection: close`) → `stopping` (grace period over: what is still in flight
/// is answered 503 and nothing new is dispatched) → `stopped`.
///
/// The shutdown sequence waits for a `Quiet` condition through `wait(until:)`: the change that brings it
/// about (the last request completing, the last resume returning) resumes the waiter; nothing polls.
final class RequestRegistry: Sendable {
    enum Phase: Sendable, Equatable {
        case idle, running, draining, stopping, stopped
    }

    /// What the shutdown sequence waits for.
    enum Quiet: Sendable {
        /// No request active (every one answered and reported complete by MHD).
        case noneActive
        /// No connection suspended for a handler and no resume still returning: MHD may be stopped.
        case noneSuspended

        fileprivate func holds(in s: State) -> Bool {
            switch self {
            case .noneActive: s.active == 0
            case .noneSuspended: s.inFlight.isEmpty && s.resuming == 0
            }
        }
    }

    fileprivate struct Waiter {
        let id: UInt64
        let quiet: Quiet
        let continuation: CheckedContinuation<Void, Never>
    }

    fileprivate struct InFlight {
        let context: RequestContext
        var deadline: Double
        var task: Task<Void, Never>?
    }

    fileprivate struct State {
        var phase: Phase = .idle
        var nextSerial: UInt64 = 0
        /// Requests whose headers are in and whose completion MHD has not reported yet.
        var active = 0
        /// Suspended connections waiting for a handler.
        var inFlight: [UInt64: InFlight] = [:]
        /// Answers claimed whose `MHD_resume_connection` has not returned yet.
        var resuming = 0
        var nextWaiterID: UInt64 = 0
        /// The shutdown's waits, resumed by the change that makes their condition hold (or cancellation).
        var waiters: [Waiter] = []

        /// The waiters whose condition holds now, removed (to resume once the lock is released).
        mutating func satisfiedWaiters() -> [CheckedContinuation<Void, Never>] {
            guard !waiters.isEmpty else { return [] }
            var ready: [CheckedContinuation<Void, Never>] = []
            var left: [Waiter] = []
            for w in waiters {
                if w.quiet.holds(in: self) { ready.append(w.continuation) } else { left.append(w) }
            }
            waiters = left
            return ready
        }
    }

    private let state = Lock(State())

    /// Applies `change` under the lock, then resumes the waiters it satisfied.
    private func update<T>(_ change: (inout State) -> T) -> T {
        let (value, ready) = state.withLock { s in
            let value = change(&s)
            return (value, s.satisfiedWaiters())
        }
        for waiter in ready { waiter.resume() }
        return value
    }

    /// Returns once `quiet` holds (at once if it does now) or the calling task is cancelled (a deadline
    /// raced against it).
    func wait(until quiet: Quiet) async {
        let id = state.withLock { s -> UInt64 in
            s.nextWaiterID += 1
            return s.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if quiet.holds(in: s) || Task.isCancelled { return true }
                    s.waiters.append(Waiter(id: id, quiet: quiet, continuation: continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: i)
            }
            waiter?.continuation.resume()
        }
    }

    /// `wait(until:)`, given up when `deadline` returns first (a sleep on some clock).
    func wait(until quiet: Quiet, orUntil deadline: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.wait(until: quiet) }
            group.addTask { await deadline() }
            await group.next()
            group.cancelAll()
        }
    }

    /// `idle` → `running`; false if the server already ran.
    func start() -> Bool {
        state.withLock { s in
            guard s.phase == .idle else { return false }
            s.phase = .running
            return true
        }
    }

    var phase: Phase { state.withLock { $0.phase } }

    /// A request's headers are in: counts it and gives it a serial number.
    func open() -> UInt64 {
        state.withLock { s in
            s.active += 1
            s.nextSerial &+= 1
            return s.nextSerial
        }
    }

    /// MHD reported the request complete (answered, aborted or dropped).
    func close() {
        update { $0.active -= 1 }
    }

    /// Records a suspended connection waiting for its handler. False once stopping: the caller answers
    /// 503 itself, resumes the connection and then calls `resumed()` (counted like a claim, so the
    /// daemon is not stopped in between).
    func admit(_ context: RequestContext, deadline: Double) -> Bool {
        state.withLock { s in
            guard s.phase == .running || s.phase == .draining else {
                s.resuming += 1
                return false
            }
            s.inFlight[context.serial] = InFlight(context: context, deadline: deadline, task: nil)
            return true
        }
    }

    /// Remembers the handler's task so that the deadline can cancel it. False when the request was
    /// answered already: by its handler (nothing to do) or by the deadline or the shutdown while the
    /// handler's synchronous start ran (the caller cancels the task).
    func attach(_ serial: UInt64, task: Task<Void, Never>) -> Bool {
        state.withLock { s in
            guard s.inFlight[serial] != nil else { return false }
            s.inFlight[serial]?.task = task
            return true
        }
    }

    /// Moves an in-flight request's deadline to `deadline` if that is later (nothing once it was answered).
    func extend(_ serial: UInt64, to deadline: Double) {
        state.withLock { s in
            guard let current = s.inFlight[serial]?.deadline, current < deadline else { return }
            s.inFlight[serial]?.deadline = deadline
        }
    }

    /// Takes the in-flight request to answer it; nil if it was answered already (deadline vs handler).
    /// The caller must resume the connection and then call `resumed()`.
    func claim(_ serial: UInt64) -> RequestContext? {
        update { s in
            guard let entry = s.inFlight.removeValue(forKey: serial) else { return nil }
            s.resuming += 1
            return entry.context
        }
    }

    /// A claimed connection's `MHD_resume_connection` returned.
    func resumed() {
        update { $0.resuming -= 1 }
    }

    /// In-flight requests past their deadline at `now`, with their handler tasks (to cancel).
    func overdue(at now: Double) -> [(serial: UInt64, task: Task<Void, Never>?)] {
        state.withLock { s in
            s.inFlight.filter { $0.value.deadline <= now }.map { (serial: $0.key, task: $0.value.task) }
        }
    }

    /// `running` → `draining`.
    func beginDraining() {
        state.withLock { s in
            if s.phase == .running { s.phase = .draining }
        }
    }

    /// → `stopping`: returns what is still in flight (to answer 503 and cancel).
    func beginStopping() -> [(serial: UInt64, task: Task<Void, Never>?)] {
        state.withLock { s in
            s.phase = .stopping
            return s.inFlight.map { (serial: $0.key, task: $0.value.task) }
        }
    }

    /// → `stopped`.
    func finish() {
        state.withLock { $0.phase = .stopped }
    }

    /// Whether responses should close their connection (shutdown has begun).
    var isShuttingDown: Bool {
        state.withLock { $0.phase != .running }
    }

    /// Counters for the shutdown sequence and tests.
    var counts: (active: Int, inFlight: Int, resuming: Int) {
        state.withLock { (active: $0.active, inFlight: $0.inFlight.count, resuming: $0.resuming) }
    }
}
