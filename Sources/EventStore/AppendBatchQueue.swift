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

    private var waiting: [(entry: Entry, events: Int, exclusive: [String])] = []
    /// Per worker, the exclusive tokens (streams, keys) of the batch it is running.
    private var running: [Set<String>]
    private(set) var workers: [WorkerPhase]
    let configuration: GroupCommit

    init(configuration: GroupCommit) {
        self.configuration = configuration
        workers = Array(repeating: .stopped, count: configuration.maxConcurrentBatches)
        running = Array(repeating: [], count: configuration.maxConcurrentBatches)
    }

    var waitingCount: Int { waiting.count }

    /// Adds an append; says which worker to wake, if any. `exclusive` names what no two batches in
    /// flight, and no one batch, may share (its stream, its idempotency key): a repeat waits for the next
    /// batch, so batches never race each other on a stream and need a single round.
    mutating func enqueue(_ entry: Entry, events: Int, exclusive: [String] = []) -> Wake {
        waiting.append((entry, events, exclusive))
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

    /// A worker asks for work (which also says its previous batch is done): the next batch, or nil (the
    /// worker is then idle and should park).
    mutating func next(worker: Int) -> [Entry]? {
        running[worker] = []
        var taken = Set<String>()
        for (w, tokens) in running.enumerated() where w != worker { taken.formUnion(tokens) }
        var batch: [Entry] = []
        var mine = Set<String>()
        var events = 0
        var left: [(entry: Entry, events: Int, exclusive: [String])] = []
        left.reserveCapacity(waiting.count)
        for item in waiting {
            let full = batch.count >= configuration.maxBatchSize
                || (!batch.isEmpty && events + item.events > configuration.maxBatchEvents)
            if full || item.exclusive.contains(where: { taken.contains($0) || mine.contains($0) }) {
                left.append(item)
                // Later appends with the same tokens must not overtake this one.
                taken.formUnion(item.exclusive)
                continue
            }
            batch.append(item.entry)
            mine.formUnion(item.exclusive)
            events += item.events
        }
        waiting = left
        guard !batch.isEmpty else {
            workers[worker] = .idle
            return nil
        }
        workers[worker] = .busy
        running[worker] = mine
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
