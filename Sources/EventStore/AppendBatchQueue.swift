/// The group-commit queue as a pure state machine: appends wait here, and whenever a batch slot is free the
/// machine hands out everything waiting (up to the batch limits) as one batch. The shell (`AppendBatcher`)
/// keeps it in a `Mutex` and performs the batches it returns after releasing the lock.
///
/// Batches form by queueing, not by timers: while `maxConcurrentBatches` batches are in flight, arrivals
/// accumulate, and the first slot to free up takes them all. A lone append therefore leaves at once.
struct AppendBatchQueue<Entry> {
    private var waiting: [(entry: Entry, events: Int)] = []
    private var head = 0
    private(set) var inFlight = 0
    let configuration: GroupCommit

    init(configuration: GroupCommit) {
        self.configuration = configuration
    }

    var waitingCount: Int { waiting.count - head }

    /// Adds an append; returns a batch to start now when a slot is free.
    mutating func enqueue(_ entry: Entry, events: Int) -> [Entry]? {
        waiting.append((entry, events))
        guard inFlight < configuration.maxConcurrentBatches else { return nil }
        return takeBatch()
    }

    /// A batch finished; returns the next one to run on the freed slot, if appends are waiting.
    mutating func batchFinished() -> [Entry]? {
        precondition(inFlight > 0, "batchFinished without a batch in flight")
        inFlight -= 1
        return takeBatch()
    }

    private mutating func takeBatch() -> [Entry]? {
        guard head < waiting.count else { return nil }
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
        inFlight += 1
        return batch
    }
}
