import EventStore
import Foundation
import Postgres
import Runtime

/// Group commit for visit commands: commands submitted at the same time run as one batch
/// (`VisitCommandHandler.executeBatch`: one statement reads their states, one pipeline writes them in one
/// transaction), each keeping its own outcome. No timer is involved: a lone command leaves at once.
///
/// The schedule (`CommandBatchSchedule`) promises:
/// - One batch forms (reads and decides) at a time; commands that come meanwhile wait and leave together in the
///   next batch, which is taken as soon as the forming one's writes go out. Up to `maxConcurrentBatches` are in
///   flight, of which `maxConcurrentWrites` write at once: by default the next batch reads and decides while
///   the previous one writes, and sends its writes once that commit is back.
/// - A batch that gets its turn to write takes along what waits where that needs no read of a visit's events:
///   commands on visits not in flight whose states this process committed last, and bookings (whose visits'
///   states, none, and customers' data keys it reads in one round trip) (`executeBatch`'s `joining`).
/// - Commands on one visit leave in the order they came; a visit is in at most one batch in flight.
/// - A caller cancelled while its command still waits takes it back: it is never run. Once in a batch, it
///   runs to its end, whatever happens to its caller.
///
/// Every visit command of the product goes this way, with or without an HTTP `Idempotency-Key` (a keyed
/// command carries the statement that stores its answer in `alsoRun`). Like `execute(_:on:)`, a lost race
/// comes back as `wrongExpectedVersion` for the caller to retry on the new state (`LostRace`).
///
/// Each batch runs in a task of its own (so that no caller's cancellation reaches it), awaited by the caller
/// of its first command, which answers the others. Why it is shaped so: Docs/performance.md, "Why the
/// command batcher is shaped this way".
public final class VisitCommandBatcher: Sendable {
    fileprivate struct Entry: Sendable, ScheduledCommand {
        let id: UInt64
        let command: VisitCommand
        let continuation: CheckedContinuation<Turn, any Error>
        var visitId: String { command.visitId }
        var sharesItsVisit: Bool { command.sharesItsVisit }
    }

    /// What a waiting caller is resumed with: its command's answer, or the batch it leads (runs and awaits).
    fileprivate enum Turn: Sendable {
        case answered(VisitCommandResult)
        case lead(Task<Result<VisitCommandResult, any Error>, Never>)
    }

    private struct State {
        var schedule: CommandBatchSchedule<Entry, ParkedWriter>
        var nextId: UInt64 = 0
    }

    public let handler: VisitCommandHandler
    public let maxBatchSize: Int
    public let maxConcurrentBatches: Int
    /// Batches whose writes may be with PostgreSQL at once (at most `maxConcurrentBatches`).
    public let maxConcurrentWrites: Int
    private let state: Lock<State>

    /// Batches in flight at once unless told otherwise: a second batch reads and decides while the first writes
    /// and waits for its commit (`serve` takes `LIVEVISITS_COMMAND_BATCHES`; figures in Docs/performance.md).
    public static let defaultConcurrentBatches = 2

    /// Batches writing at once unless told otherwise (`LIVEVISITS_COMMAND_WRITES`): one, so that command writes
    /// keep one PostgreSQL backend busy and leave the others to the outbox's claims and completions (where
    /// PostgreSQL has cores to spare, two write faster: Docs/performance.md, finding 38).
    public static let defaultConcurrentWrites = 1

    public init(
        handler: VisitCommandHandler, maxBatchSize: Int = 64, maxConcurrentBatches: Int = defaultConcurrentBatches,
        maxConcurrentWrites: Int = defaultConcurrentWrites
    ) {
        let schedule = CommandBatchSchedule<Entry, ParkedWriter>(
            maxBatchSize: maxBatchSize, maxConcurrentBatches: maxConcurrentBatches,
            maxConcurrentWrites: maxConcurrentWrites)
        self.handler = handler
        self.maxBatchSize = schedule.maxBatchSize
        self.maxConcurrentBatches = schedule.maxConcurrentBatches
        self.maxConcurrentWrites = schedule.maxConcurrentWrites
        self.state = Lock(State(schedule: schedule))
    }

    /// Runs `command` in the next batch and returns its own result. The caller tells followers and workers
    /// after a success (`store.eventsCommitted`, `pushes.committed()`).
    public func execute(_ command: VisitCommand) async throws -> VisitCommandResult {
        let id = state.withLock { s -> UInt64 in
            s.nextId += 1
            return s.nextId
        }
        let turn = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Turn, any Error>) in
                let start = state.withLock { s -> [Entry]?? in
                    if Task.isCancelled { return .none }
                    return .some(s.schedule.submit(Entry(id: id, command: command, continuation: continuation)))
                }
                switch start {
                case .none: continuation.resume(throwing: CancellationError())
                case .some(let batch?): self.start(batch)
                case .some(nil): break
                }
            }
        } onCancel: {
            let withdrawn = state.withLock { $0.schedule.withdraw(id) }
            withdrawn?.continuation.resume(throwing: CancellationError())
        }
        switch turn {
        case .answered(let result): return result
        // Not cancelled with its caller: the batch carries other callers' commands.
        case .lead(let batch): return try await batch.value.get()
        }
    }

    /// Batches run so far (each may carry many commands).
    public var batchesRun: Int { state.withLock { $0.schedule.batches } }

    /// Commands queued for a batch and not yet taken (what a test waits on before withdrawing one).
    public var waitingCount: Int { state.withLock { $0.schedule.waiting.count } }

    /// Batches waiting for their turn to write (what a test waits on to see a batch held behind another's write).
    public var waitingToWrite: Int { state.withLock { $0.schedule.writers.count } }

    /// Starts a batch the schedule took: in a task of its own, led by its first command's caller, who awaits it
    /// (the others are answered by the batch).
    private func start(_ batch: [Entry]) {
        let task = Task { await self.run(batch) }
        batch[0].continuation.resume(returning: .lead(task))
    }

    /// Runs a batch, answers its commands and those that joined it late (but the first, whose outcome is
    /// returned to its caller, the batch's leader), and starts the batch the schedule takes in its place.
    private func run(_ batch: [Entry]) async -> Result<VisitCommandResult, any Error> {
        let (all, outcomes) = await write(batch)
        for (entry, outcome) in zip(all, outcomes).dropFirst() {
            entry.continuation.resume(with: outcome.map(Turn.answered))
        }
        if let next = state.withLock({ $0.schedule.finished(all) }) { start(next) }
        return outcomes[0]
    }

    /// A batch's writes are going out (or it never got a connection): the next batch may form, and starts now
    /// if commands wait and another batch may be in flight.
    private func wrote() {
        if let next = state.withLock({ $0.schedule.wrote() }) { start(next) }
    }

    /// Executes a batch; returns its commands and those that joined it late, with their outcomes in order.
    private func write(_ batch: [Entry]) async -> ([Entry], [Result<VisitCommandResult, any Error>]) {
        let handler = self.handler
        let commands = batch.map(\.command)
        // The next batch may form once this one's writes are going out (`wrote`), exactly once per batch.
        let formed = Lock(false)
        let letTheNextForm: @Sendable () -> Void = {
            if formed.withLock({ f in
                defer { f = true }
                return !f
            }) {
                self.wrote()
            }
        }
        let joined = Lock<[Entry]>([])
        let room = maxBatchSize - batch.count
        let workTimeout = handler.store.pool.configuration.workTimeoutSeconds
        let outcomes: [Result<VisitCommandResult, any Error>]
        do {
            outcomes = try await handler.store.pool.withConnection { connection in
                // The pool's work timeout runs from here, and a cancel it sends while this batch waits for its
                // turn reaches an idle connection and is lost: so the batch waits at most half of it, and gives
                // up unwritten (its commands answer unavailable) rather than write with no timeout left.
                let started = ContinuousClock.now
                var holding = false
                defer {
                    if holding { self.releaseTurn() }
                    letTheNextForm()
                }
                return handler.executeBatch(
                    commands, on: connection,
                    writing: { writes in
                        // When the writes are about to go out, this batch waits for a turn to write (the previous
                        // batch's commit), which it holds until it ends. The next batch forms while it waits; with a
                        // turn free at once, only after what waits now has joined this one (`joining`), so the two do
                        // not split the waiting commands between them. (Nothing left to write: answers go out at once.)
                        guard writes else {
                            letTheNextForm()
                            return true
                        }
                        let writer = ParkedWriter()
                        let ticket = self.state.withLock { s -> UInt64? in
                            s.nextId += 1
                            return s.schedule.requestTurn(s.nextId, writer: writer) ? nil : s.nextId
                        }
                        guard let ticket else {
                            holding = true
                            return true
                        }
                        letTheNextForm()
                        // (This is the connection's own thread, which the synchronous batch holds anyway.)
                        let left = workTimeout.map { $0 / 2 - (ContinuousClock.now - started).inSeconds }
                        if writer.wait(seconds: left) || !self.state.withLock({ $0.schedule.abandonTurn(ticket) }) {
                            holding = true
                        }
                        return holding
                    },
                    joining: {
                        // What came while this batch waited for its turn leaves with it rather than a write later.
                        let states = handler.states
                        let entries = self.state.withLock { s in
                            s.schedule.lateJoiners(room: room) {
                                states.isAssumed($0.command.visitId) || VisitCommandHandler.joinsWithARead($0.command)
                            }
                        }
                        joined.withLock { $0 = entries }
                        letTheNextForm()
                        return entries.map(\.command)
                    })
            }
        } catch {
            // No connection was had (or the work timed out after its writes were told): the next batch may form.
            letTheNextForm()
            let all = batch + joined.withLock { $0 }
            return (all, all.map { _ in .failure(error) })
        }
        let all = batch + joined.withLock { $0 }
        handler.store.metrics.increment("livevisits_command_batches_total", help: "Visit-command group-commit batches run.")
        handler.store.metrics.increment(
            "livevisits_command_batched_total", help: "Visit commands that went through group commit.", by: Double(all.count))
        if all.count > batch.count {
            handler.store.metrics.increment(
                "livevisits_command_batch_joined_total",
                help: "Visit commands that joined a group-commit batch while it waited for its turn to write.",
                by: Double(all.count - batch.count))
        }
        return (all, outcomes)
    }

    /// A batch holding a turn to write ends: the next in line gets it.
    private func releaseTurn() {
        state.withLock { $0.schedule.releaseTurn() }?.wake()
    }
}

/// A batch waiting for its turn to write, on its connection's thread (the batch is synchronous there): woken
/// by the batch whose turn it takes, or given up at its deadline.
final class ParkedWriter: @unchecked Sendable {
    // @unchecked Sendable: `woken` is read and written only under `condition`'s lock.
    private let condition = NSCondition()
    private var woken = false

    /// Gives the writer its turn (before or while it waits).
    func wake() {
        condition.lock()
        woken = true
        condition.signal()
        condition.unlock()
    }

    /// Blocks until woken (true) or `seconds` pass (false); nil: no deadline.
    func wait(seconds: Double?) -> Bool {
        let deadline = seconds.map { Date(timeIntervalSinceNow: max(0, $0)) }
        condition.lock()
        defer { condition.unlock() }
        while !woken {
            if let deadline {
                if !condition.wait(until: deadline) { return woken }
            } else {
                condition.wait()
            }
        }
        return true
    }
}
