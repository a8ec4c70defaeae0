import Synchronization

/// The server's lifecycle and its in-flight requests, as one state machine behind one Mutex.
/// Callers act (resume a connection, cancel a task) after the lock is released, on what it returns.
///
/// Phases: `idle` → `running` → `draining` (shutdown began: no new connections, in-flight requests
/// finish, responses say `Connection: close`) → `stopping` (grace period over: what is still in flight
/// is answered 503 and nothing new is dispatched) → `stopped`.
final class RequestRegistry: Sendable {
    enum Phase: Sendable, Equatable {
        case idle, running, draining, stopping, stopped
    }

    private struct InFlight {
        let context: RequestContext
        let deadline: Double
        var task: Task<Void, Never>?
    }

    private struct State {
        var phase: Phase = .idle
        var nextSerial: UInt64 = 0
        /// Requests whose headers are in and whose completion MHD has not reported yet.
        var active = 0
        /// Suspended connections waiting for a handler.
        var inFlight: [UInt64: InFlight] = [:]
        /// Answers claimed whose `MHD_resume_connection` has not returned yet.
        var resuming = 0
    }

    private let state = Mutex(State())

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
        state.withLock { $0.active -= 1 }
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

    /// Takes the in-flight request to answer it; nil if it was answered already (deadline vs handler).
    /// The caller must resume the connection and then call `resumed()`.
    func claim(_ serial: UInt64) -> RequestContext? {
        state.withLock { s in
            guard let entry = s.inFlight.removeValue(forKey: serial) else { return nil }
            s.resuming += 1
            return entry.context
        }
    }

    /// A claimed connection's `MHD_resume_connection` returned.
    func resumed() {
        state.withLock { $0.resuming -= 1 }
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
