/// The group-commit queue as a pure state machine. Appends wait here; a few batch workers (threads the
/// shell owns, one database connection each) take everything waiting, up to the batch limits, as one batch.
/// The shell (`AppendBatcher`) keeps the machine in a `Mutex` and performs the actions it returns after
/// releasing the lock.
///
/// Batches form by queueing, not by timers: while every worker is busy, arrivals accumulate, and the first
/// worker to finish takes them all. A lone append leaves at once.
struct AppendBatchQueue<Entry> {
    /// What the shell must do after an `enqueue`.
    enum Wake: Equatable {
        /// Every worker is busy or already woken: it will find the append when it asks for work.
        case none
        /// Signal this parked worker.
        case signal(worker: Int)
        /// Start this worker's thread (it is not running).
        case start(worker: Int)
    }

    enum WorkerPhase: Equatable {
        /// No thread.
        case stopped
        /// Parked, waiting for a signal.
        case idle
        /// Running a batch, or woken and about to ask for one.
        case busy
    }

    private var waiting: [(entry: Entry, events: Int)] = []
    private var head = 0
    private(set) var workers: [WorkerPhase]
    let configuration: GroupCommit

    init(configuration: GroupCommit) {
        self.configuration = configuration
        workers = Array(repeating: .stopped, count: configuration.maxConcurrentBatches)
    }

    var waitingCount: Int { waiting.count - head }

    /// Adds an append; says which worker to wake, if any.
    mutating func enqueue(_ entry: Entry, events: Int) -> Wake {
        waiting.append((entry, events))
        if let idle = workers.firstIndex(of: .idle) {
            workers[idle] = .busy
            return .signal(worker: idle)
        }
        if let stopped = workers.firstIndex(of: .stopped) {
            workers[stopped] = .busy
            return .start(worker: stopped)
        }
        return .none
    }

    /// A worker asks for work: the next batch, or nil (the worker is then idle and should park).
    mutating func next(worker: Int) -> [Entry]? {
        guard head < waiting.count else {
            workers[worker] = .idle
            return nil
        }
        workers[worker] = .busy
        var batch: [Entry] = []
        var events = 0
        while head < waiting.count, batch.count < configuration.maxBatchSize {
            let next = waiting[head]
            // The first append always goes, even when it alone exceeds the event limit.
            if !batch.isEmpty && events + next.events > configuration.maxBatchEvents { break }
            batch.append(next.entry)
            events += next.events
            head += 1
        }
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 {
            waiting.removeFirst(head)
            head = 0
        }
        return batch
    }

    /// A parked worker waited its idle time without a signal: true when it should stop (its thread ends
    /// and its connection closes); false when it was woken meanwhile and should ask for work.
    mutating func idleTimedOut(worker: Int) -> Bool {
        guard workers[worker] == .idle else { return false }
        workers[worker] = .stopped
        return true
    }
}
