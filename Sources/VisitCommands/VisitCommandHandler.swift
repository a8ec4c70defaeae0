import EventStore
import Foundation
import Outbox
import PersonalData
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// Where the pushes an accepted event implies go: outbox intents, written by statements that run in the
/// event's own transaction (in the same round trip as the event and the read-model row).
public protocol PushEnqueuer: Sendable {
    /// The intents of one accepted event's push plans, checked: a plan the outbox would refuse fails its
    /// command alone, before anything is written.
    func intents(for plans: [PushPlan], state: VisitState) throws -> [PushIntent]
    /// Statements that write the intents of one or more commands, given in the commands' order (a batch's
    /// usually become one statement).
    func statements(for intents: [PushIntent]) throws -> [PostgresQuery]
    /// Called after the transaction that enqueued committed (wake the workers).
    func committed()
    /// A statement for the same transaction that tells, per visit, whether its intents could have a target at
    /// all, and fails the transaction where a visit marked `skipped` (its intents left out) has one now; nil:
    /// this enqueuer cannot tell, and every intent is written.
    func targetsProbe(_ visits: [Outbox.ProbedVisit]) -> PostgresQuery?
    /// The probe's answers for `count` visits, in order.
    func targetsFound(_ rows: PostgresRows, count: Int) throws -> [Bool]
    /// Whether `error` is the probe failing a transaction: a visit marked `skipped` has a target.
    func targetsAppeared(_ error: any Error) -> Bool
}

extension PushEnqueuer {
    public func committed() {}
    public func targetsProbe(_ visits: [Outbox.ProbedVisit]) -> PostgresQuery? { nil }
    public func targetsFound(_ rows: PostgresRows, count: Int) throws -> [Bool] { [] }
    public func targetsAppeared(_ error: any Error) -> Bool { false }
}

/// Writes no pushes: for benchmarks and tests of the other parts of the command path.
public struct NoPushes: PushEnqueuer {
    public init() {}
    public func intents(for plans: [PushPlan], state: VisitState) throws -> [PushIntent] { [] }
    public func statements(for intents: [PushIntent]) throws -> [PostgresQuery] { [] }
}

/// Who is asking and under which conditions.
public struct VisitCommandContext: Sendable {
    public var actor: EventMetadata
    /// `If-Match`: the version the visit must be at.
    public var expectedVersion: Int?
    /// Checked inside the transaction against the folded state (a technician may only touch their visits).
    public var authorize: @Sendable (VisitState) throws -> Void

    public init(
        actor: EventMetadata, expectedVersion: Int? = nil, authorize: @escaping @Sendable (VisitState) throws -> Void = { _ in }
    ) {
        self.actor = actor
        self.expectedVersion = expectedVersion
        self.authorize = authorize
    }
}

/// One command on one visit: the event, who asks and under which conditions, and statements to run in the
/// same round trip after its writes (`alsoRun`, such as storing the answer an idempotent request gives).
public struct VisitCommand: Sendable {
    public var visitId: String
    public var event: VisitEvent
    public var context: VisitCommandContext
    /// True for `scheduled` (the visit must not exist yet).
    public var isCreation: Bool
    /// Statements run after the command's writes, in their transaction and round trip, given the visit's view
    /// text after the command (`VisitCommandResult.view`); their rows come back in `alsoRows`.
    public var alsoRun: @Sendable (_ view: String) -> [PostgresQuery]
    /// Whether the answer needs who follows the visit after the command (`VisitCommandResult.followers`): read
    /// in the same round trip after the writes, in one statement for every such command of a batch.
    public var withFollowers: Bool
    /// A read run in the same round trip as the visit's state: when it returns a row, the command is
    /// refused (`CommandPreconditionFailed`) before anything is decided or written — so a command that
    /// `alsoRun` would make fail (the API: an Idempotency-Key already taken) does not fail a whole batch.
    public var refuseIfAnyRow: PostgresQuery?

    public init(
        visitId: String, event: VisitEvent, context: VisitCommandContext, isCreation: Bool,
        alsoRun: @escaping @Sendable (_ view: String) -> [PostgresQuery] = { _ in [] }, withFollowers: Bool = false,
        refuseIfAnyRow: PostgresQuery? = nil
    ) {
        self.visitId = visitId
        self.event = event
        self.context = context
        self.isCreation = isCreation
        self.alsoRun = alsoRun
        self.withFollowers = withFollowers
        self.refuseIfAnyRow = refuseIfAnyRow
    }

    var stream: String { VisitCommandHandler.streamName(for: visitId) }

    /// Whether the command may share a batch with other commands on its visit (decided after them, in
    /// order): not when it carries a `refuseIfAnyRow` read, since what it guards (an idempotent answer,
    /// composed from the visit as the batch leaves it) assumes it is its visit's only command.
    public var sharesItsVisit: Bool { refuseIfAnyRow == nil }
}

/// What a command did.
public struct VisitCommandResult: Sendable {
    public let state: VisitState
    public let appended: AppendResult
    public let pushes: Int
    /// The visit's view text after the command (`VisitReadModel.body(view:liveActivities:)` makes it a
    /// response body).
    public let view: String
    /// The rows of the `alsoRun` statements, in order.
    public let alsoRows: [PostgresRows]
    /// Who follows the visit after the command, when it asked (`VisitCommand.withFollowers`).
    public let followers: VisitFollowers?
}

/// A command's `refuseIfAnyRow` read found a row: nothing was decided or written.
public struct CommandPreconditionFailed: Error, Sendable {
    public init() {}
}

/// A version precondition that failed (`If-Match`): 409.
public struct VersionMismatch: Error, Sendable, CustomStringConvertible {
    public let expected: Int
    public let actual: Int
    public var description: String { "the visit is at version \(actual), not \(expected)" }
}

/// The write side of a visit: read its state, decide, then append the event, update the read model and
/// enqueue the pushes in one transaction, so a crash never leaves an event without its read-model row or
/// its outbox rows.
///
/// Two round trips: one statement reads the folded state kept in the read model (`visits.state`) and the
/// stream's version — when they differ (the row is behind the stream), the stream is folded instead —
/// and one pipeline writes the event (at the next position, so a concurrent writer makes it fail on the
/// unique index), the read-model rows (the visit's and its technician's) and the outbox rows. Outside a transaction that pipeline is its own
/// transaction; inside the caller's, it is part of it.
public struct VisitCommandHandler: Sendable {
    public let store: EventStore
    public let readModel: VisitReadModel
    public let pushes: any PushEnqueuer
    public let clock: any WallClock
    /// The customers' data keys: with them, the personal fields of a `scheduled` event are sealed before the
    /// event is decided, so the event, the read model, the outbox bodies and any stored answer only ever
    /// hold ciphertext (`PersonalDataOpener` opens them on the way out). Nil: stored as given (tests of
    /// other parts, and `livevisits-bench append --personal-data off`).
    public let personalData: PersonalDataKeys?
    /// Where the data keys a committed write made or read are remembered, so that its answer (a booking's,
    /// its customer's fields) and its `start` push open them without reading the key again.
    public let dataKeyCache: PersonalDataKeyCache?
    /// The states this handler's batches committed: the next command on such a visit reads no snapshot.
    public let states: VisitStateCache

    public init(
        store: EventStore, readModel: VisitReadModel, pushes: any PushEnqueuer, clock: any WallClock = SystemClock(),
        personalData: PersonalDataKeys? = nil, dataKeyCache: PersonalDataKeyCache? = nil,
        states: VisitStateCache = VisitStateCache()
    ) {
        self.store = store
        self.readModel = readModel
        self.pushes = pushes
        self.clock = clock
        self.personalData = personalData
        self.dataKeyCache = dataKeyCache
        self.states = states
    }

    public static func streamName(for visitId: String) -> String { VisitReadModel.streamPrefix + visitId }

    /// Schedules a visit (its first event). `already_scheduled` (409) when the id exists.
    public func schedule(_ scheduled: VisitScheduled, context: VisitCommandContext) async throws -> VisitCommandResult {
        try await execute(visitId: scheduled.attributes.visitId, event: .scheduled(scheduled), context: context, isCreation: true)
    }

    /// Appends one event to an existing visit.
    public func post(visitId: String, event: VisitEvent, context: VisitCommandContext) async throws -> VisitCommandResult {
        try await execute(visitId: visitId, event: event, context: context, isCreation: false)
    }

    /// The same on a connection: by itself (its writes are then one implicit transaction), or inside the
    /// caller's transaction (the HTTP layer stores its idempotent answer in it too). `alsoRun` statements
    /// run after the writes in the same round trip and transaction; their rows come back in `alsoRows`.
    /// The caller calls `store.eventsCommitted` and `pushes.committed()` after the commit.
    public func execute(
        visitId: String, event: VisitEvent, context: VisitCommandContext, isCreation: Bool,
        alsoRun: @escaping @Sendable (_ view: String) -> [PostgresQuery] = { _ in [] }, on connection: PostgresConnection
    ) throws -> VisitCommandResult {
        try execute(
            VisitCommand(visitId: visitId, event: event, context: context, isCreation: isCreation, alsoRun: alsoRun),
            on: connection)
    }

    public func execute(_ command: VisitCommand, on connection: PostgresConnection) throws -> VisitCommandResult {
        // In a transaction of the caller's, which this handler does not see commit, it forgets the visit's state (a
        // state remembered for it would be assumed behind the visit); committed by itself, it remembers the new one.
        if connection.inTransaction { states.forget([command.visitId], distrusting: false) }
        let keysReadAt = dataKeyCache?.generation()
        let read = try currentStates([command], on: connection)
        let prepared = try prepare(command, state: try read.states[0].get(), keys: read.keys, on: connection)
        let encoded = readModel.encode([prepared.accepted.state])
        var statements = [EventStore.appendStatement(prepared.request, guarded: false)] + readModel.upsertStatements(encoded)
        statements += try pushes.statements(for: prepared.pushIntents)
        let followersAt = statements.count
        if command.withFollowers { statements.append(VisitFollowers.query(visitIds: [command.visitId])) }
        let firstExtra = statements.count
        statements += command.alsoRun(encoded.views[0])
        let results: [PostgresRows]
        do {
            results = try connection.pipeline(statements)
        } catch let error as PostgresError {
            throw try EventStore.appendFailure(error, prepared.request, on: connection)
        }
        if !connection.inTransaction {
            states.remember([prepared.accepted.state])
            if let keysReadAt { dataKeyCache?.remember(read.keys.values, readAt: keysReadAt) }
        }
        return VisitCommandResult(
            state: prepared.accepted.state, appended: try EventStore.appendResult(prepared.request, results[0], on: connection),
            pushes: prepared.accepted.pushes.count, view: encoded.views[0], alsoRows: Array(results[firstExtra...]),
            followers: command.withFollowers ? try VisitFollowers.each(results[followersAt], count: 1)[0] : nil)
    }

    /// Runs commands together (group commit, see `VisitCommandBatcher`): one statement reads their visits'
    /// states, each command is decided on its own, and one pipeline writes all that were accepted — their
    /// events in one statement, their read-model rows in one per read model, their outbox rows — in one transaction.
    /// Each command gets its own outcome. If the shared write fails for anything but the database being
    /// unreachable (a concurrent writer took a position, say), nothing of it stands and each command is run
    /// again alone, in order, so one command's conflict cannot fail its neighbours.
    ///
    /// Several commands on one visit (a hot visit) are decided in order, each on the state the one before
    /// it left (or on the state before it, when that one was refused), and append at consecutive positions:
    /// the same outcomes as one transaction each, in one. A command with a `refuseIfAnyRow` read (an
    /// idempotent request, whose stored answer is composed from the visit's row) shares its visit with no
    /// other: it and whatever follows it on that visit run alone after the batch.
    ///
    /// `writing` is called once, when the batch's reading and deciding are done and its writes go out (or
    /// when it has nothing left to share), told whether anything is left to write: the batcher lets the next
    /// batch form from then on, and answers whether this batch may write. When it may not (its turn to write
    /// did not come in time), nothing of it is written and its commands fail as `unavailable`.
    ///
    /// `joining` is called once the batch may write and has something to: the commands it answers join the
    /// batch late (those that came while it waited for its turn), after its own, and their outcomes follow
    /// the others' in the result. A joining command on a visit this process committed last (`states.assumed`)
    /// and not in the batch already is decided on that state, like an assumed one; any other, and its
    /// visit's later ones, runs alone after the batch.
    ///
    /// A write cancelled (the pool's work timeout, a `statement_timeout`) or one to an unreachable database
    /// stops the batch: its commands and those left to run alone fail as `unavailable` (run on, they would
    /// have no timeout left).
    public func executeBatch(
        _ commands: [VisitCommand], on connection: PostgresConnection, writing: (_ writes: Bool) -> Bool = { _ in true },
        joining: () -> [VisitCommand] = { [] }
    ) -> [Result<VisitCommandResult, any Error>] {
        var commands = commands
        var told = false
        var mayWrite = true
        var halted: PostgresError?
        @discardableResult
        func tellWriting(_ writes: Bool = true) -> Bool {
            if !told { mayWrite = writing(writes) }
            told = true
            return mayWrite
        }
        var outcomes = [Result<VisitCommandResult, any Error>?](repeating: nil, count: commands.count)
        // The first command on each visit reads its state; later ones follow it in the batch when both may
        // (`sharesItsVisit`), else run alone afterwards (and so does everything after them on that visit).
        var leads: [Int] = []
        var inBatch: [Int] = []
        var mayFollow: [String: Bool] = [:]
        for (i, command) in commands.enumerated() {
            if let open = mayFollow[command.visitId] {
                if open && command.sharesItsVisit {
                    inBatch.append(i)
                } else {
                    mayFollow[command.visitId] = false
                }
            } else {
                leads.append(i)
                inBatch.append(i)
                mayFollow[command.visitId] = command.sharesItsVisit
            }
        }
        var current: [String: Result<VisitState?, any Error>] = [:]
        // Visits decided on the state this process committed last, without reading it (`states.assumed`): the
        // write verifies it (a position taken meanwhile fails the batch, which is then redone on read states).
        // A refusal decided on it stands only if the batch wrote that visit too (the write proved the state);
        // otherwise it is decided again after the batch, on a read state.
        var assumed = Set<String>()
        var toRead: [Int] = []
        for i in leads {
            if commands[i].refuseIfAnyRow == nil, let state = states.assumed(commands[i].visitId) {
                current[commands[i].visitId] = .success(state)
                assumed.insert(commands[i].visitId)
            } else {
                toRead.append(i)
            }
        }
        var keys: [String: PersonalDataKeys.DataKey] = [:]
        // The keys this batch makes, stored by its write (not committed on their own before it).
        var keysToStore: [String: PostgresQuery] = [:]
        let keysReadAt = dataKeyCache?.generation()
        do {
            let read = try currentStates(toRead.map { commands[$0] }, makingKeysInTheWrite: true, on: connection)
            for (i, state) in zip(toRead, read.states) { current[commands[i].visitId] = state }
            keys = read.keys
            keysToStore = read.keysToStore
        } catch {
            for i in inBatch where !assumed.contains(commands[i].visitId) { outcomes[i] = .failure(error) }
            inBatch = inBatch.filter { assumed.contains(commands[$0].visitId) }
        }
        var prepared: [(index: Int, prepared: Prepared)] = []
        var refusedOnAssumed: [(index: Int, error: any Error)] = []
        func decide(_ i: Int) {
            let visit = commands[i].visitId
            do {
                let p = try prepare(commands[i], state: try current[visit]!.get(), keys: keys, on: connection)
                prepared.append((i, p))
                current[visit] = .success(p.accepted.state)
            } catch {
                if assumed.contains(visit) {
                    refusedOnAssumed.append((i, error))
                } else {
                    outcomes[i] = .failure(error)
                }
            }
        }
        for i in inBatch { decide(i) }
        if !prepared.isEmpty {
            var requests: [AppendRequest] = []
            var views: [String?] = []
            var extras: [Range<Int>] = []
            var followed: [Int] = []
            var followersAt = 0
            var probed: [Outbox.ProbedVisit] = []
            var probeAt: Int?
            var results: [PostgresRows]?
            // The read-model rows to write: the last state of each visit (an upsert may not touch a row twice),
            // encoded before the turn to write; the views of the states before it are rendered for their
            // commands' answers only. (Commands that join late are on other visits: their rows are added.)
            func lastOfEachVisit(_ range: Range<Int>) -> [(n: Int, row: VisitReadModel.EncodedRow)] {
                var last: [String: Int] = [:]
                for n in range { last[prepared[n].prepared.command.visitId] = n }
                return range.filter { last[prepared[$0].prepared.command.visitId] == $0 }.map {
                    ($0, readModel.encodeRow(prepared[$0].prepared.accepted.state))
                }
            }
            var rows = lastOfEachVisit(prepared.indices)
            do {
                guard tellWriting() else { throw Self.notWritten }
                // Commands that came while this batch waited for its turn join it: decided after it, on the
                // states this process committed last (like `assumed`), and bookings of new visits on their states
                // and their customers' data keys, read for them all in one round trip (a booking otherwise waits
                // for the next batch, a batch's time later than the events beside it). One that cannot join, and
                // its visit's later ones, run alone after the batch, in order.
                let firstJoined = commands.count
                let decidedBeforeJoining = prepared.count
                commands += joining()
                outcomes += [Result<VisitCommandResult, any Error>?](repeating: nil, count: commands.count - firstJoined)
                let readLate = readJoiningBookings(
                    commands[firstJoined...], into: &current, keys: &keys, storing: &keysToStore, on: connection)
                var joinedVisits = Set<String>()
                var alone = Set<String>()
                for i in firstJoined..<commands.count {
                    let visit = commands[i].visitId
                    if alone.contains(visit) || !commands[i].sharesItsVisit {
                        alone.insert(visit)
                        continue
                    }
                    if !joinedVisits.contains(visit) && readLate.contains(visit) {
                        joinedVisits.insert(visit)
                    } else if !joinedVisits.contains(visit) {
                        guard current[visit] == nil, let state = states.assumed(visit) else {
                            alone.insert(visit)
                            continue
                        }
                        current[visit] = .success(state)
                        assumed.insert(visit)
                        joinedVisits.insert(visit)
                    }
                    decide(i)
                }
                rows += lastOfEachVisit(decidedBeforeJoining..<prepared.count)
                requests = prepared.map(\.prepared.request)
                let encoded = readModel.encode(rows.map(\.row))
                views = [String?](repeating: nil, count: prepared.count)
                for (n, row) in rows { views[n] = row.view }
                let head = [EventStore.appendStatement(forEach: requests)] + readModel.upsertStatements(encoded)
                // The commands whose answers need the visit's followers: one statement for them all.
                followed = prepared.indices.filter { prepared[$0].prepared.command.withFollowers }
                // The batch's statements. Its pushes go together, in the commands' order (usually one statement) —
                // but those of visits known to have no push target (`VisitStateCache.hasTargets`), which would
                // write nothing: the probe after them checks in this transaction that those visits still have
                // none, and learns it of the visits not known yet. (Neither inside a caller's transaction: a failed
                // probe would end it, and what it learns there is not kept.)
                func assemble(skipping: Bool) throws -> [PostgresQuery] {
                    var statements = head
                    probed = []
                    probeAt = nil
                    extras = []
                    var seen = Set<String>()
                    var skipped = Set<String>()
                    for (_, p) in prepared where !connection.inTransaction && seen.insert(p.command.visitId).inserted {
                        let visit = p.command.visitId
                        let known = states.hasTargets(visit)
                        if known == true { continue }
                        let skip = skipping && known == false
                        if skip { skipped.insert(visit) }
                        probed.append((visit, p.accepted.state.customerId, skip))
                    }
                    statements += try pushes.statements(
                        for: prepared.flatMap(\.prepared.pushIntents).filter { !skipped.contains($0.visitId) })
                    if !probed.isEmpty, let probe = pushes.targetsProbe(probed) {
                        probeAt = statements.count
                        statements.append(probe)
                    }
                    if !followed.isEmpty {
                        followersAt = statements.count
                        statements.append(VisitFollowers.query(visitIds: followed.map { prepared[$0].prepared.command.visitId }))
                    }
                    for (n, (_, p)) in prepared.enumerated() {
                        // (A view drawn here is kept for the command's answer, not drawn again.)
                        let view = views[n] ?? readModel.viewText(for: p.accepted.state)
                        views[n] = view
                        let also = p.command.alsoRun(view)
                        extras.append(statements.count..<(statements.count + also.count))
                        statements += also
                    }
                    // The keys its bookings sealed under that this batch made. A key another writer made for the
                    // customer meanwhile fails the write (a unique violation): the batch is then redone one by one.
                    for customer in Set(prepared.compactMap { Self.bookedCustomer($0.prepared.command) }).sorted() {
                        if let store = keysToStore[customer] { statements.append(store) }
                    }
                    return statements
                }
                do {
                    results = try connection.pipeline(try assemble(skipping: true))
                } catch let error where pushes.targetsAppeared(error) {
                    // A visit written without its pushes has a target now (registered through another process):
                    // nothing was written; the batch goes again with every push.
                    states.targetsRegistered(visits: probed.filter(\.skipped).map(\.visitId))
                    store.metrics.increment(
                        "livevisits_command_batch_targets_appeared_total",
                        help: "Command batches written again with their pushes: a visit known to have no push target had one.")
                    results = try connection.pipeline(try assemble(skipping: false))
                }
            } catch {
                if let stop = Self.stopping(error) {
                    // The rest fail alike. (The write may have committed before the connection went: its visits are
                    // read again, not assumed.)
                    halted = stop
                    for (i, _) in prepared { outcomes[i] = .failure(stop) }
                    states.forget(prepared.map(\.prepared.command.visitId), distrusting: false)
                } else {
                    // Nothing of the batch stands: left for the one-by-one pass below. A state assumed here may have
                    // been behind (another process wrote the visit): none of the batch's visits is assumed again,
                    // and none at all for a while.
                    states.forget(prepared.map(\.prepared.command.visitId), distrusting: !assumed.isEmpty)
                    store.metrics.increment(
                        "livevisits_command_batches_redone_total",
                        help: "Command batches whose shared write failed and was redone one by one.")
                }
            }
            if let results {
                // Committed: whatever happens now, these commands are not run again. (Inside a caller's
                // transaction nothing is committed yet: its states are not remembered.)
                if !connection.inTransaction {
                    // (Answers that cannot be read teach nothing; the commands stand.)
                    let found = probeAt.flatMap { try? pushes.targetsFound(results[$0], count: probed.count) } ?? []
                    let targets = Dictionary(zip(probed.map(\.visitId), found), uniquingKeysWith: { $1 })
                    states.remember(prepared.map(\.prepared.accepted.state), targets: targets)
                    if let keysReadAt { dataKeyCache?.remember(keys.values, readAt: keysReadAt) }
                }
                let skipped = Set(probed.filter(\.skipped).map(\.visitId))
                if !skipped.isEmpty {
                    store.metrics.increment(
                        "livevisits_command_pushes_skipped_total",
                        help: "Visit commands written without the outbox's statement: their visit had no push target.",
                        by: Double(prepared.filter { skipped.contains($0.prepared.command.visitId) }.count))
                }
                let written = Set(prepared.map(\.prepared.command.visitId))
                for (i, error) in refusedOnAssumed where written.contains(commands[i].visitId) { outcomes[i] = .failure(error) }
                do {
                    let appended = try EventStore.appendResults(requests, results[0])
                    // Followers that cannot be read fail the commands that asked for them, not the others.
                    var followers = [Result<VisitFollowers?, any Error>](repeating: .success(nil), count: prepared.count)
                    if !followed.isEmpty {
                        let read = Result { try VisitFollowers.each(results[followersAt], count: followed.count) }
                        for (k, n) in followed.enumerated() { followers[n] = read.map { $0[k] } }
                    }
                    for (n, (i, p)) in prepared.enumerated() {
                        outcomes[i] = followers[n].map { visitFollowers in
                            VisitCommandResult(
                                state: p.accepted.state, appended: appended[n], pushes: p.accepted.pushes.count,
                                view: views[n] ?? readModel.viewText(for: p.accepted.state),
                                alsoRows: Array(results[extras[n]]), followers: visitFollowers)
                        }
                    }
                } catch {
                    for (i, _) in prepared { outcomes[i] = .failure(error) }
                }
            }
        }
        let mayRunAlone = tellWriting(outcomes.contains { $0 == nil })
        return commands.indices.map { i in
            if let outcome = outcomes[i] { return outcome }
            if let halted { return .failure(halted) }
            if !mayRunAlone { return .failure(Self.notWritten) }
            let outcome = Result { try execute(commands[i], on: connection) }
            if case .failure(let error) = outcome, let stop = Self.stopping(error) {
                halted = stop
                return .failure(stop)
            }
            return outcome
        }
    }

    /// Whether a command waiting while a batch is about to write may join it although this process has not
    /// committed its visit (`executeBatch` reads its state then): a booking.
    public static func joinsWithARead(_ command: VisitCommand) -> Bool {
        command.isCreation && command.sharesItsVisit
    }

    /// Reads, in one round trip, the states of the visits that `joining` commands book (`joinsWithARead`, each its
    /// visit's first command there, on a visit neither in the batch nor assumed) and their customers' data keys;
    /// the visits read. Nothing is read when none books one, nor when the read fails (they then run alone).
    private func readJoiningBookings(
        _ joining: ArraySlice<VisitCommand>, into current: inout [String: Result<VisitState?, any Error>],
        keys: inout [String: PersonalDataKeys.DataKey], storing keysToStore: inout [String: PostgresQuery],
        on connection: PostgresConnection
    ) -> Set<String> {
        var seen = Set<String>()
        let bookings = joining.filter { command in
            seen.insert(command.visitId).inserted && Self.joinsWithARead(command) && current[command.visitId] == nil
                && !states.isAssumed(command.visitId)
        }
        guard !bookings.isEmpty, let read = try? currentStates(bookings, makingKeysInTheWrite: true, on: connection) else {
            return []
        }
        for (command, state) in zip(bookings, read.states) { current[command.visitId] = state }
        // A key this batch made already stands for its customer.
        keys.merge(read.keys) { made, _ in made }
        keysToStore.merge(read.keysToStore) { made, _ in made }
        return Set(bookings.map(\.visitId))
    }

    /// The customer a command books a visit for, if it books one.
    static func bookedCustomer(_ command: VisitCommand) -> String? {
        if case .scheduled(let scheduled) = command.event { return scheduled.customerId }
        return nil
    }

    /// What a batch whose turn to write did not come answers.
    static let notWritten = PostgresError(
        code: .unavailable, message: "the previous command batch's write did not end in time; nothing of this one was written")

    /// `error` as the batch stops on it — an unreachable database, or a cancelled statement, answered as
    /// `unavailable` — or nil when it does not stop the batch.
    static func stopping(_ error: any Error) -> PostgresError? {
        guard let error = error as? PostgresError, error.isUnavailable || error.wasCancelled else { return nil }
        return error.isUnavailable ? error : PostgresError(code: .unavailable, message: error.message, sqlState: error.sqlState)
    }

    /// The states of visits before their commands, in one statement: for each, the snapshot in the read
    /// model when it is at the stream's version (the statement reads both), else the stream folded. A
    /// visit whose stream cannot be folded fails alone. Where the read model's row is at the version of the
    /// state this process committed last (`states`), the statement answers `=` instead of the snapshot, and
    /// that state is used: no snapshot sent and parsed again.
    ///
    /// The data keys of the customers the commands book a visit for are read (made on first use: by this read,
    /// or with `makingKeysInTheWrite` by the write) in the same round trip, by customer: a booking then seals its
    /// personal fields without a round trip of its own (`sealed`), while the batch it is in waits for its
    /// decisions.
    func currentStates(_ commands: [VisitCommand], makingKeysInTheWrite: Bool = false, on connection: PostgresConnection)
        throws -> ReadStates
    {
        var customers: [String] = []
        if personalData != nil {
            for customer in commands.compactMap(Self.bookedCustomer) where !customers.contains(customer) {
                customers.append(customer)
            }
        }
        return try currentStates(
            of: commands.map(\.visitId), refusals: commands.map(\.refuseIfAnyRow), dataKeysOf: customers,
            makingKeysInTheWrite: makingKeysInTheWrite, on: connection)
    }

    /// What a batch's read found: each visit's state (or why it could not be read), the data keys of the
    /// customers it books for, and the statements that store those keys it made (by customer), which go in
    /// the write (`makingKeysInTheWrite`).
    struct ReadStates {
        var states: [Result<VisitState?, any Error>]
        var keys: [String: PersonalDataKeys.DataKey]
        var keysToStore: [String: PostgresQuery] = [:]
    }

    /// The same for visits by id, each with its command's `refuseIfAnyRow` read (or nil), and the data keys of
    /// `customers`: made by the read where one is missing (a key another transaction made after the read's
    /// snapshot is left out: `sealed` asks again), or, `makingKeysInTheWrite`, only read, a missing one made
    /// here and stored by the write that seals under it (`keysToStore`): a booking of a new customer then
    /// commits once, not once for its key and again for its visit.
    func currentStates(
        of ids: [String], refusals: [PostgresQuery?], dataKeysOf customers: [String] = [], makingKeysInTheWrite: Bool = false,
        on connection: PostgresConnection
    ) throws -> ReadStates {
        guard !ids.isEmpty else { return ReadStates(states: [], keys: [:]) }
        let streams = ids.map(Self.streamName(for:))
        let known = PostgresBinaryArray(states.versions(ids))
        // Planned once per connection: its plan (two index probes per visit) holds for any number of visits,
        // and PostgreSQL's own choice re-planned it at nearly every execution (a generic plan takes the arrays
        // for ten elements and so looks costlier than a custom one for the five of a usual batch).
        let statesRead: PostgresQuery = """
            SELECT r.idx,
                   (SELECT CASE WHEN v.version = r.known THEN '=' ELSE v.state END
                    FROM visits v WHERE v.visit_id = r.visit_id) AS state,
                   (SELECT COALESCE(max(position), 0) FROM events WHERE stream_name = r.stream) AS version
            FROM unnest(\(PostgresBinaryArray(ids))::text[], \(PostgresBinaryArray(streams))::text[], \(known)::bigint[]) WITH ORDINALITY AS r(visit_id, stream, known, idx)
            ORDER BY r.idx
            """
        let statesQuery = statesRead.plannedOnce()
        // The commands' refusal reads and the customers' data keys, when there are any, in the same round trip.
        let checked = refusals.indices.filter { refusals[$0] != nil }
        let rows: PostgresRows
        var refused = Set<Int>()
        var keys: [String: PersonalDataKeys.DataKey] = [:]
        var keysToStore: [String: PostgresQuery] = [:]
        if checked.isEmpty && customers.isEmpty {
            rows = try connection.query(statesQuery)
        } else {
            let keyStatements = try customers.map {
                makingKeysInTheWrite
                    ? personalData!.dataKeyReadStatement(forCustomer: $0) : try personalData!.dataKeyStatement(forCustomer: $0)
            }
            let results = try connection.pipeline([statesQuery] + checked.map { refusals[$0]! } + keyStatements)
            rows = results[0]
            for (i, found) in zip(checked, results[1...]) where !found.isEmpty { refused.insert(i) }
            for (customer, made) in zip(customers, results[(1 + checked.count)...]) {
                keys[customer] = try personalData!.dataKey(made: made)
                if keys[customer] == nil && makingKeysInTheWrite {
                    let new = try personalData!.newDataKey(forCustomer: customer)
                    keys[customer] = new.key
                    keysToStore[customer] = new.store
                }
            }
        }
        guard rows.count == ids.count else {
            throw PostgresError(code: .protocolViolation, message: "read \(rows.count) visit states for \(ids.count) visits")
        }
        let read = zip(ids.indices, rows.rows).map { i, row in
            if refused.contains(i) { return Result<VisitState?, any Error>.failure(CommandPreconditionFailed()) }
            return Result {
                let version = try row.int("version")
                // The row is at the version of the state remembered here; so is the stream: that state.
                if row["state"] == "=", let remembered = states.state(ids[i]), remembered.version == version {
                    return remembered
                }
                return try state(fromSnapshot: row["state"], version: version, stream: streams[i], on: connection)
            }
        }
        return ReadStates(states: read, keys: keys, keysToStore: keysToStore)
    }

    /// A command decided and ready to write: its event, read-model row and outbox intents.
    struct Prepared {
        let command: VisitCommand
        let accepted: AcceptedVisitEvent
        let request: AppendRequest
        let pushIntents: [PushIntent]
    }

    /// Checks the command against the visit's state (authorization, existence, `If-Match`) and decides.
    /// An unknown visit is unknown whatever version the caller expected (404, not a version conflict).
    func prepare(
        _ command: VisitCommand, state: VisitState?, keys: [String: PersonalDataKeys.DataKey] = [:],
        on connection: PostgresConnection
    ) throws -> Prepared {
        if let state { try command.context.authorize(state) }
        if command.isCreation == false && state == nil {
            throw VisitDecisionError(
                code: .notScheduled, message: "visit \(command.visitId) does not exist", status: nil,
                eventType: command.event.type)
        }
        if let expected = command.context.expectedVersion, expected != (state?.version ?? 0) {
            throw VersionMismatch(expected: expected, actual: state?.version ?? 0)
        }
        let now = Int(clock.epochSeconds())
        // Timestamps never go backwards within a visit even if this clock is behind the last event.
        let recordedAt = max(now, state?.lastRecordedAt ?? now)
        let event = try sealed(command.event, state: state, keys: keys, on: connection)
        let accepted = try VisitDecider.accept(event, given: state, recordedAt: recordedAt, rules: readModel.rules)
        let request = AppendRequest(
            streamName: command.stream,
            events: [
                NewEvent(
                    type: accepted.recorded.event.eventType,
                    data: String(decoding: accepted.recorded.event.storedData(), as: UTF8.self),
                    metadata: command.context.actor)
            ],
            expectedVersion: state.map { .exactly(Int64($0.version)) } ?? .noStream,
            recordedAt: Double(accepted.recorded.recordedAt))
        try EventStore.validate(request, limits: store.limits)
        return Prepared(
            command: command, accepted: accepted, request: request,
            pushIntents: try pushes.intents(for: accepted.pushes, state: accepted.state))
    }

    /// The event with the customer's personal fields sealed under their data key (made on first use, in the
    /// command's transaction): the attributes and the location of `scheduled`, the `reason` of `cancelled`,
    /// `failed` and `progress`. A failed visit shows its reason as `vanDescription`, so that reason carries the
    /// technician's van as its fallback (`SealedText.fallback`): what the visit shows once the customer is erased.
    /// A booking's key comes from `keys` (read with the commands' states, in their round trip) when it is there.
    func sealed(
        _ event: VisitEvent, state: VisitState?, keys: [String: PersonalDataKeys.DataKey] = [:],
        on connection: PostgresConnection
    ) throws -> VisitEvent {
        guard let personalData else { return event }
        switch event {
        case .scheduled(var scheduled):
            let key = try keys[scheduled.customerId] ?? personalData.dataKey(forCustomer: scheduled.customerId, on: connection)
            scheduled.attributes.customerFirstName = try personalData.seal(scheduled.attributes.customerFirstName, with: key)
            scheduled.attributes.serviceAddress = try personalData.seal(scheduled.attributes.serviceAddress, with: key)
            scheduled.attributes.jobSummary = try personalData.seal(scheduled.attributes.jobSummary, with: key)
            scheduled.location = try scheduled.location.map { try personalData.seal($0, with: key) }
            return .scheduled(scheduled)
        case .cancelled(let reason?):
            guard let state else { return event }
            let key = try personalData.dataKey(forCustomer: state.customerId, on: connection)
            return .cancelled(reason: try personalData.seal(reason, with: key))
        case .progress(let update, let reason?):
            guard let state else { return event }
            let key = try personalData.dataKey(forCustomer: state.customerId, on: connection)
            return .progress(update, reason: try personalData.seal(reason, with: key))
        case .failed(let reason):
            guard let state else { return event }
            let key = try personalData.dataKey(forCustomer: state.customerId, on: connection)
            return .failed(reason: try personalData.seal(reason, with: key, fallback: state.technician.vanDescription))
        default:
            return event
        }
    }

    /// The snapshot when it is at the stream's version, else the stream folded (nil: no such visit).
    private func state(fromSnapshot text: String?, version: Int, stream: String, on connection: PostgresConnection) throws
        -> VisitState?
    {
        if let text, let snapshot = try? VisitState(snapshot: Array(text.utf8)), snapshot.version == version {
            return snapshot
        }
        if version == 0 { return nil }
        let history = try EventStore.readStream(stream, on: connection).map {
            StoredVisitEvent(
                eventType: $0.type, data: Array($0.data.utf8), version: Int($0.position),
                recordedAt: Int($0.recordedAt.rounded(.down)))
        }
        return try VisitDecider.replay(history)
    }

    private func execute(visitId: String, event: VisitEvent, context: VisitCommandContext, isCreation: Bool) async throws
        -> VisitCommandResult
    {
        // Without If-Match a lost race is retried on the new state; with it, the conflict is the answer.
        do {
            let result = try await LostRace.retrying(context.expectedVersion == nil && !isCreation) {
                try await store.pool.withConnection { connection in
                    try execute(visitId: visitId, event: event, context: context, isCreation: isCreation, on: connection)
                }
            }
            store.eventsCommitted(count: 1)
            if result.pushes > 0 { pushes.committed() }
            return result
        } catch let error as EventStoreError where error.code == .wrongExpectedVersion {
            if let expected = context.expectedVersion {
                throw VersionMismatch(expected: expected, actual: Int(error.actualVersion ?? 0))
            }
            if isCreation {
                throw VisitDecisionError(
                    code: .alreadyScheduled, message: "visit \(visitId) is already scheduled", status: nil, eventType: .scheduled)
            }
            throw error
        } catch let error as PostgresError where error.isUnavailable {
            throw EventStoreError(code: .unavailable, message: error.message, underlying: error)
        }
    }
}
