import Dispatch
import EventStore
import Postgres
import Runtime
import Synchronization

/// Group commit for visit commands: commands submitted at the same time run as one batch (`VisitCommandHandler.executeBatch`: one statement reads their states, one pipeline writes them
/// in one transaction), each keeping its own outcome. One batch forms at a time: while a batch reads its
/// states and decides, new commands wait, and they leave together in the next batch once its writes are
/// sent (up to `maxConcurrentBatches` in flight, of which `maxConcurrentWrites` write at once, one by default:
/// the next batch reads and decides while the previous one writes) — that waiting is what forms batches; no timer is
/// involved, so a lone command leaves at once. (A second batch forming beside the first only split the
/// waiting commands in two and paid PostgreSQL's cost per batch twice; forming while the previous batch
/// writes and commits is where the overlap pays.) Commands on one visit that wait together leave together,
/// in order; a command on a visit that is in a batch in flight waits for the next batch, so batches never
/// race each other on a visit.
///
/// A batch that gets its turn to write takes along what came while it waited, where that needs no read: the
/// waiting commands on visits not in flight whose states this process committed last join it late, decided on
/// those states (`executeBatch`'s `joining`; `livevisits_command_batch_joined_total`). Under load the commands
/// come back from one commit while the next batch waits for it; without this they waited for the batch after
/// that, and a closed loop of N clients ran in batches of N/2 and more than a commit's wait each.
///
/// Every visit command of the product goes this way, with or without an HTTP `Idempotency-Key` (a keyed
/// command carries the statement that stores its answer in `alsoRun`). Like `execute(_:on:)`, a lost race
/// comes back as `wrongExpectedVersion` for the caller to retry on the new state (`LostRace`). A caller
/// cancelled while its command still waits (the HTTP server gave up on the request) takes it back: it is
/// never run, so a retry of the request cannot append it twice. Once in a batch, it runs to its end.
public final class VisitCommandBatcher: Sendable {
    private struct Entry: Sendable {
        let id: UInt64
        let command: VisitCommand
        let continuation: CheckedContinuation<VisitCommandResult, any Error>
    }

    private struct State {
        var waiting: [Entry] = []
        var running = 0
        /// Batches taken that are still reading and deciding (their writes not yet sent): at most one.
        var forming = 0
        var inFlight: Set<String> = []
        var nextId: UInt64 = 0
        var batches = 0
    }

    public let handler: VisitCommandHandler
    public let maxBatchSize: Int
    public let maxConcurrentBatches: Int
    /// Batches whose writes may be with PostgreSQL at once (at most `maxConcurrentBatches`).
    public let maxConcurrentWrites: Int
    private let state = Mutex(State())
    /// The turns to write: with one (the default), the next batch reads and decides while the previous one
    /// writes and commits, and sends its writes once that commit is back.
    private let writeTurns: DispatchSemaphore

    /// Batches in flight at once unless told otherwise: a second batch reads and decides while the first writes
    /// and waits for its commit (`serve` takes `LIVEVISITS_COMMAND_BATCHES`; figures in Docs/performance.md).
    public static let defaultConcurrentBatches = 2

    /// Batches writing at once unless told otherwise: one. Two batches writing at once kept two PostgreSQL
    /// backends busy with command writes, and on a machine whose cores PostgreSQL shares with the outbox worker
    /// (or the worker's claims and completions share with them) the deliveries waited behind both: the POST →
    /// APNs tail. Where PostgreSQL has cores to spare and nothing else waits on them, two write faster
    /// (`LIVEVISITS_COMMAND_WRITES`; figures in Docs/performance.md, finding 38).
    public static let defaultConcurrentWrites = 1

    public init(
        handler: VisitCommandHandler, maxBatchSize: Int = 64, maxConcurrentBatches: Int = defaultConcurrentBatches,
        maxConcurrentWrites: Int = defaultConcurrentWrites
    ) {
        self.handler = handler
        self.maxBatchSize = max(1, maxBatchSize)
        self.maxConcurrentBatches = max(1, maxConcurrentBatches)
        self.maxConcurrentWrites = min(max(1, maxConcurrentWrites), self.maxConcurrentBatches)
        self.writeTurns = DispatchSemaphore(value: self.maxConcurrentWrites)
    }

    /// Runs `command` in the next batch and returns its own result. The caller tells followers and workers
    /// after a success (`store.eventsCommitted`, `pushes.committed()`).
    public func execute(_ command: VisitCommand) async throws -> VisitCommandResult {
        let id = state.withLock { s -> UInt64 in
            s.nextId += 1
            return s.nextId
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let start = state.withLock { s -> Bool? in
                    if Task.isCancelled { return nil }
                    s.waiting.append(Entry(id: id, command: command, continuation: continuation))
                    guard s.running < maxConcurrentBatches, s.forming == 0 else { return false }
                    s.running += 1
                    return true
                }
                switch start {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: Task { await self.drain() }
                case false?: break
                }
            }
        } onCancel: {
            let withdrawn = state.withLock { s -> Entry? in
                guard let index = s.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiting.remove(at: index)
            }
            withdrawn?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Batches run so far (each may carry many commands).
    public var batchesRun: Int { state.withLock { $0.batches } }

    /// Commands queued for a batch and not yet taken (what a test waits on before withdrawing one).
    public var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// One runner: takes batches until nothing it may take is waiting.
    private func drain() async {
        while let batch = take() {
            let ran = await run(batch)
            state.withLock { s in for entry in ran { s.inFlight.remove(entry.command.visitId) } }
        }
    }

    /// Of `waiting` (oldest first), the commands a batch takes — at most `room`, none on a visit in flight, a
    /// visit's first only if `admits` it, its later ones after it while they may share it — and the rest.
    private static func select(_ waiting: [Entry], room: Int, inFlight: Set<String>, admits: (VisitCommand) -> Bool)
        -> (taken: [Entry], rest: [Entry], visits: Set<String>)
    {
        var taken: [Entry] = []
        var rest: [Entry] = []
        // Visits taken, and whether a later command of theirs may still follow.
        var open: [String: Bool] = [:]
        // Visits with a command left waiting: their later commands wait too.
        var held = Set<String>()
        for entry in waiting {
            let visit = entry.command.visitId
            let joins: Bool
            if taken.count >= room || inFlight.contains(visit) {
                joins = false
            } else if let mayFollow = open[visit] {
                joins = mayFollow && entry.command.sharesItsVisit
            } else {
                joins = !held.contains(visit) && admits(entry.command)
            }
            if joins {
                taken.append(entry)
                open[visit] = entry.command.sharesItsVisit
            } else {
                rest.append(entry)
                held.insert(visit)
                if open[visit] != nil { open[visit] = false }
            }
        }
        return (taken, rest, Set(open.keys))
    }

    /// The next batch (oldest first, none on a visit in flight), or nil — in which case this runner has
    /// stopped. A hot visit's waiting commands leave together, in order (`executeBatch` decides each on the
    /// state the one before it left), unless one of them may not share its visit (`sharesItsVisit`): that
    /// one waits for a batch of its own, and the visit's later commands wait behind it, so a visit's
    /// commands always run in the order they came.
    private func take() -> [Entry]? {
        state.withLock { s in
            // One batch forms at a time: the next leaves once this one's writes are out (`wrote`).
            if s.forming > 0 {
                s.running -= 1
                return nil
            }
            let (batch, rest, visits) = Self.select(s.waiting, room: maxBatchSize, inFlight: s.inFlight) { _ in true }
            guard !batch.isEmpty else {
                s.running -= 1
                return nil
            }
            s.waiting = rest
            s.inFlight.formUnion(visits)
            s.batches += 1
            s.forming += 1
            return batch
        }
    }

    /// A batch's reads and decisions are done and its writes are going out (or it never got a connection): the
    /// next batch may form, and if commands wait and another batch may be in flight, it starts now.
    private func wrote() {
        let start = state.withLock { s -> Bool in
            s.forming -= 1
            guard !s.waiting.isEmpty, s.running < maxConcurrentBatches else { return false }
            s.running += 1
            return true
        }
        if start { Task { await self.drain() } }
    }

    /// Commands that wait now and may join a batch about to write (`executeBatch`'s `joining`): on visits not in
    /// flight whose state this process committed last (decided without a read), in the order they came, at most
    /// `room`. They are in flight from now.
    private func lateJoiners(room: Int) -> [Entry] {
        guard room > 0 else { return [] }
        let states = handler.states
        return state.withLock { s in
            guard !s.waiting.isEmpty else { return [] }
            let (joining, rest, visits) = Self.select(s.waiting, room: room, inFlight: s.inFlight) { command in
                command.sharesItsVisit && states.isAssumed(command.visitId)
            }
            s.waiting = rest
            s.inFlight.formUnion(visits)
            return joining
        }
    }

    /// Runs a batch; returns its commands and those that joined it late, all answered.
    private func run(_ batch: [Entry]) async -> [Entry] {
        let handler = self.handler
        let commands = batch.map(\.command)
        // The next batch may form once this one's writes are going out (`wrote`), exactly once per batch.
        let formed = Mutex(false)
        let letTheNextForm: @Sendable () -> Void = {
            if formed.withLock({ f in
                defer { f = true }
                return !f
            }) {
                self.wrote()
            }
        }
        let joined = Mutex<[Entry]>([])
        let room = maxBatchSize - batch.count
        let writeTurns = self.writeTurns
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
                    if holding { writeTurns.signal() }
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
                        if writeTurns.wait(timeout: .now()) == .success {
                            holding = true
                            return true
                        }
                        letTheNextForm()
                        if let workTimeout {
                            let left = workTimeout / 2 - (ContinuousClock.now - started).inSeconds
                            holding = left > 0 && writeTurns.wait(timeout: .now() + left) == .success
                        } else {
                            writeTurns.wait()
                            holding = true
                        }
                        return holding
                    },
                    joining: {
                        // What came while this batch waited for its turn leaves with it rather than a write later.
                        let entries = self.lateJoiners(room: room)
                        joined.withLock { $0 = entries }
                        letTheNextForm()
                        return entries.map(\.command)
                    })
            }
        } catch {
            // No connection was had (or the work timed out after its writes were told): the next batch may form.
            letTheNextForm()
            let all = batch + joined.withLock { $0 }
            for entry in all { entry.continuation.resume(throwing: error) }
            return all
        }
        let all = batch + joined.withLock { $0 }
        Metrics.shared.increment("livevisits_command_batches_total", help: "Visit-command group-commit batches run.")
        Metrics.shared.increment(
            "livevisits_command_batched_total", help: "Visit commands that went through group commit.", by: Double(all.count))
        if all.count > batch.count {
            Metrics.shared.increment(
                "livevisits_command_batch_joined_total",
                help: "Visit commands that joined a group-commit batch while it waited for its turn to write.",
                by: Double(all.count - batch.count))
        }
        for (entry, outcome) in zip(all, outcomes) {
            entry.continuation.resume(with: outcome)
        }
        return all
    }
}
