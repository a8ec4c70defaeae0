/// A command as the batch schedule sees it: which visit it is on and whether later commands on that visit
/// may share its batch.
protocol ScheduledCommand {
    var id: UInt64 { get }
    var visitId: String { get }
    var sharesItsVisit: Bool { get }
}

/// `VisitCommandBatcher`'s scheduling as a state machine with no I/O and no clock: which waiting commands
/// leave in the next batch, when a batch may form, and which batch writes next. The batcher holds it under a
/// lock; its transitions return what to do (start a batch, wake a writer) and the batcher does it once
/// the lock is released.
///
/// Invariants:
/// - At most `maxConcurrentBatches` batches run at once (`running`), and at most one of them is forming
///   (reading and deciding, its writes not yet sent): the next batch is taken only once that one's writes go
///   out (`wrote`), so what waits meanwhile leaves together.
/// - At most `maxConcurrentWrites` batches hold a turn to write; the others wait for one in the order they
///   asked (`Writer`s, woken by `releaseTurn`).
/// - A visit is in at most one running batch (`inFlight`); a visit's commands leave in the order they came.
struct CommandBatchSchedule<Command: ScheduledCommand, Writer> {
    let maxBatchSize: Int
    let maxConcurrentBatches: Int
    let maxConcurrentWrites: Int

    private(set) var waiting: [Command] = []
    /// Batches taken and not yet finished.
    private(set) var running = 0
    /// Batches taken that are still reading and deciding: at most one.
    private(set) var forming = 0
    private(set) var inFlight: Set<String> = []
    /// Batches taken so far.
    private(set) var batches = 0
    /// Batches holding a turn to write.
    private(set) var writing = 0
    /// Batches waiting for a turn to write, first come first served.
    private(set) var writers: [(ticket: UInt64, writer: Writer)] = []

    init(maxBatchSize: Int, maxConcurrentBatches: Int, maxConcurrentWrites: Int) {
        self.maxBatchSize = max(1, maxBatchSize)
        self.maxConcurrentBatches = max(1, maxConcurrentBatches)
        self.maxConcurrentWrites = min(max(1, maxConcurrentWrites), self.maxConcurrentBatches)
    }

    // MARK: batches

    /// A command comes: it waits, and the batch to start now is returned (nil: none may start — one is forming,
    /// or as many as may run are running — and the command leaves with a later one).
    mutating func submit(_ command: Command) -> [Command]? {
        waiting.append(command)
        guard running < maxConcurrentBatches else { return nil }
        return take(starting: true)
    }

    /// A waiting command's caller gave up: the command is taken back (nil: it is in a batch already).
    mutating func withdraw(_ id: UInt64) -> Command? {
        guard let index = waiting.firstIndex(where: { $0.id == id }) else { return nil }
        return waiting.remove(at: index)
    }

    /// A batch's reads and decisions are done and its writes are going out (or it never got a connection):
    /// the next batch may form, and starts now (returned) if commands wait and another batch may run.
    mutating func wrote() -> [Command]? {
        forming -= 1
        guard !waiting.isEmpty, running < maxConcurrentBatches else { return nil }
        return take(starting: true)
    }

    /// A batch ended with `commands` (its own and those that joined it): their visits leave flight, and the
    /// batch to run next in its place is returned (nil: none, and one batch fewer runs).
    mutating func finished(_ commands: [Command]) -> [Command]? {
        for command in commands { inFlight.remove(command.visitId) }
        return take(starting: false)
    }

    /// Commands that wait now and may join a batch about to write: on visits not in flight that `admits` (whose
    /// state is known without a read), in the order they came, at most `room`. They are in flight from now.
    mutating func lateJoiners(room: Int, admits: (Command) -> Bool) -> [Command] {
        guard room > 0, !waiting.isEmpty else { return [] }
        let (joining, rest, visits) = Self.select(waiting, room: room, inFlight: inFlight) {
            $0.sharesItsVisit && admits($0)
        }
        waiting = rest
        inFlight.formUnion(visits)
        return joining
    }

    /// The next batch (oldest first, none on a visit in flight), counted as running and forming; nil when one
    /// is forming or nothing may be taken. `starting`: for a batch beside those running (else in place of one
    /// that finished, which stops counting if none is taken).
    private mutating func take(starting: Bool) -> [Command]? {
        guard forming == 0 else {
            if !starting { running -= 1 }
            return nil
        }
        let (batch, rest, visits) = Self.select(waiting, room: maxBatchSize, inFlight: inFlight) { _ in true }
        guard !batch.isEmpty else {
            if !starting { running -= 1 }
            return nil
        }
        if starting { running += 1 }
        waiting = rest
        inFlight.formUnion(visits)
        batches += 1
        forming += 1
        return batch
    }

    /// Of `waiting` (oldest first), the commands a batch takes — at most `room`, none on a visit in flight, a
    /// visit's first only if `admits` it, its later ones after it while they may share it — and the rest. A
    /// command that may not share its visit waits for a batch of its own, and its visit's later commands
    /// wait behind it, so a visit's commands always run in the order they came.
    static func select(_ waiting: [Command], room: Int, inFlight: Set<String>, admits: (Command) -> Bool)
        -> (taken: [Command], rest: [Command], visits: Set<String>)
    {
        var taken: [Command] = []
        var rest: [Command] = []
        // Visits taken, and whether a later command of theirs may still follow.
        var open: [String: Bool] = [:]
        // Visits with a command left waiting: their later commands wait too.
        var held = Set<String>()
        for command in waiting {
            let visit = command.visitId
            let joins: Bool
            if taken.count >= room || inFlight.contains(visit) {
                joins = false
            } else if let mayFollow = open[visit] {
                joins = mayFollow && command.sharesItsVisit
            } else {
                joins = !held.contains(visit) && admits(command)
            }
            if joins {
                taken.append(command)
                open[visit] = command.sharesItsVisit
            } else {
                rest.append(command)
                held.insert(visit)
                if open[visit] != nil { open[visit] = false }
            }
        }
        return (taken, rest, Set(open.keys))
    }

    // MARK: turns to write

    /// A batch asks for a turn to write: true when it has one now; otherwise `writer` waits in line.
    mutating func requestTurn(_ ticket: UInt64, writer: Writer) -> Bool {
        if writing < maxConcurrentWrites {
            writing += 1
            return true
        }
        writers.append((ticket, writer))
        return false
    }

    /// A batch holding a turn ends: the turn passes to the first writer in line (returned, to wake), if any.
    mutating func releaseTurn() -> Writer? {
        guard !writers.isEmpty else {
            writing -= 1
            return nil
        }
        return writers.removeFirst().writer
    }

    /// A writer in line gives up: true when it left the line, false when it was given the turn meanwhile (it
    /// holds it now, and must release it).
    mutating func abandonTurn(_ ticket: UInt64) -> Bool {
        guard let index = writers.firstIndex(where: { $0.ticket == ticket }) else { return false }
        writers.remove(at: index)
        return true
    }
}
