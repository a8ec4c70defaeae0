import EventStore
import Foundation
import PersonalData
import Postgres
import Runtime
import VisitDomain
import VisitProjections

/// Technicians' location fixes (`POST /v1/technicians/{id}/location`) and what they cause: for each of the
/// technician's visits under way (`enRoute` or `nearby`, booked with a location) the shown distance, and a
/// `nearby` or `progress` when the location rules call for one (`LocationRules.event(for:on:)`).
///
/// Most fixes change nothing, and such a fix costs no database work at all: the process keeps a board in
/// memory of every visit under way — its technician, its location (opened once, when the visit comes under
/// way), its status, the distance it shows and its version — and decides each fix against it under one lock.
/// Only a fix that changes something goes to the database, as an ordinary visit command through the group
/// commit (`VisitCommandBatcher`), as that technician: versions, pushes, cadence and everything else of the
/// command path apply to it as to any posted event.
///
/// The board follows the event log (`run()`): woken by `listener(url:)` on the events channel after every
/// commit of any process (and polling every `pollIntervalSeconds` without it), it reads the events committed
/// since it last looked, gap-safely, and reads again the read-model rows of the visits they touched that may
/// come under way or leave it (another process's fixes and events, a dispatcher's, a reassignment). A
/// command this process wrote updates the board from its result at once. Before the first load has finished,
/// fixes wait for it (`loadWaitSeconds`), then answer unavailable.
///
/// A fix older than the newest this process accepted for the technician changes nothing (the rule is per
/// process: `Docs/reference.md`, "Technician location"), nor does one less accurate than
/// `LocationRules.maxAccuracyMetres`. A command decided on the board is checked again on the visit's actual
/// state when it is written (`VisitCommandContext.authorize`): a visit that moved on meanwhile, or a newer fix
/// decided for it, drops the older command. The coordinates are never stored or logged.
public final class TechnicianLocations: Service {
    public let name = "technician-locations"
    public let batcher: VisitCommandBatcher
    public let rules: LocationRules
    /// How often the log is read without a notification.
    public let pollIntervalSeconds: Double
    /// The least time between two reads of the log: under a steady stream of commits (a notification each),
    /// one pass takes in what several of them announced.
    public let minimumPassSeconds: Double
    /// How long a fix waits for the first load of the board before it answers unavailable.
    public let loadWaitSeconds: Double
    /// The server's clock: a fix dated more than `futureToleranceSeconds` after it is refused, since it would
    /// make every later, correct fix of the technician look stale.
    public let clock: any WallClock
    public static let futureToleranceSeconds = 300.0
    /// Signalled by `listener(url:)`: events were committed.
    public let wakeUp: WakeUp
    private let logger = Logger(label: "technician-locations")

    /// One visit under way, as the board knows it.
    struct Tracked: Sendable {
        var technicianId: String
        var visit: VisitUnderWay
        var version: Int
        /// The `recordedAt` of the newest fix that decided an event for this visit.
        var decidedAt: Double?
    }

    struct Board {
        var visits: [String: Tracked] = [:]
        var byTechnician: [String: Set<String>] = [:]
        /// The `recordedAt` of the newest fix accepted per technician.
        var newestFix: [String: Double] = [:]
        /// Visits whose rows are read again on the next pass (a command of theirs failed or was dropped).
        var unsure: Set<String> = []
        var checkpoint: Checkpoint?
        var loaded = false
        var loadWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiter: UInt64 = 0

        mutating func put(_ tracked: Tracked, visitId: String) {
            if let old = visits[visitId], old.technicianId != tracked.technicianId { remove(visitId) }
            visits[visitId] = tracked
            byTechnician[tracked.technicianId, default: []].insert(visitId)
        }

        mutating func remove(_ visitId: String) {
            guard let old = visits.removeValue(forKey: visitId) else { return }
            byTechnician[old.technicianId]?.remove(visitId)
            if byTechnician[old.technicianId]?.isEmpty == true { byTechnician[old.technicianId] = nil }
        }
    }

    private let board = Lock(Board())

    /// At most this many technicians' newest fixes are remembered (past it, the table starts over: a fix
    /// older than a forgotten one is then accepted once).
    static let newestFixCapacity = 200_000

    public init(
        batcher: VisitCommandBatcher, rules: LocationRules, pollIntervalSeconds: Double = 0.5,
        minimumPassSeconds: Double = 0.05, loadWaitSeconds: Double = 5, clock: any WallClock = SystemClock()
    ) {
        self.clock = clock
        self.batcher = batcher
        self.rules = rules
        self.pollIntervalSeconds = pollIntervalSeconds
        self.minimumPassSeconds = minimumPassSeconds
        self.loadWaitSeconds = loadWaitSeconds
        self.wakeUp = WakeUp()
    }

    var handler: VisitCommandHandler { batcher.handler }

    /// A LISTEN service that wakes the board on every commit of events (and after any reconnect).
    public func listener(url: String) -> PostgresListener {
        PostgresListener(url: url, channels: [EventStore.channel]) { [wakeUp] _, _ in wakeUp.signal() }
    }

    // MARK: fixes

    /// What a fix did: whether it was accepted (recent and accurate enough), and the events it appended.
    public struct Outcome: Sendable {
        public enum Refusal: String, Sendable {
            /// Older than the newest fix accepted for the technician.
            case stale
            /// Its accuracy radius is larger than the rules' `maxAccuracyMetres`.
            case inaccurate
        }
        /// Nil: accepted.
        public let refusal: Refusal?
        /// The events it appended, one per visit at most.
        public let appended: [VisitCommandResult]
    }

    /// A command decided on the board, with the board's entry as it was before (put back if the command fails).
    private struct Decided {
        let visitId: String
        let event: VisitEvent
        let location: ServiceLocation
        let before: VisitUnderWay
    }

    /// Decides `fix` for `technicianId` against the board and appends what it causes, as that technician
    /// (whoever posted the fix; `correlationId` names the request). A fix that causes nothing touches no
    /// database. Throws when the board is not loaded in time or an append fails (the database unreachable):
    /// the caller may send the fix again.
    public func accept(_ fix: TechnicianFix, technicianId: String, correlationId: String?) async throws -> Outcome {
        guard fix.recordedAt <= clock.now() + Self.futureToleranceSeconds else {
            throw VisitInputError(
                code: .invalidValue, field: "recordedAt",
                message: "recordedAt: more than \(Int(Self.futureToleranceSeconds)) s after the server's clock")
        }
        let actor = EventMetadata(actorRole: "technician", actorSubject: technicianId, correlationId: correlationId)
        if !board.withLock({ $0.loaded }) {
            guard await loaded(within: loadWaitSeconds) else {
                throw EventStoreError(code: .unavailable, message: "the visits under way are not loaded yet")
            }
        }
        guard rules.trusts(fix) else { return counted(Outcome(refusal: .inaccurate, appended: [])) }
        let rules = self.rules
        let decision = board.withLock { board -> (Outcome.Refusal?, [Decided]) in
            if let newest = board.newestFix[technicianId], fix.recordedAt < newest { return (.stale, []) }
            if board.newestFix[technicianId] == nil, board.newestFix.count >= Self.newestFixCapacity {
                board.newestFix.removeAll(keepingCapacity: true)
            }
            board.newestFix[technicianId] = fix.recordedAt
            guard let ids = board.byTechnician[technicianId] else { return (nil, []) }
            var decided: [Decided] = []
            for id in ids {
                guard var tracked = board.visits[id], let event = rules.event(for: fix, on: tracked.visit) else { continue }
                decided.append(Decided(visitId: id, event: event, location: tracked.visit.location, before: tracked.visit))
                // What the event will make of the visit, so that the next fix is decided on it.
                if case .nearby = event { tracked.visit.status = .nearby }
                if let kilometres = event.arrivalUpdate?.kilometresAway { tracked.visit.kilometresAway = kilometres }
                tracked.decidedAt = fix.recordedAt
                board.visits[id] = tracked
            }
            return (nil, decided)
        }
        if let refusal = decision.0 { return counted(Outcome(refusal: refusal, appended: [])) }
        var appended: [VisitCommandResult] = []
        var failure: (any Error)?
        for decided in decision.1 {
            do {
                if let result = try await append(decided, fix: fix, technicianId: technicianId, actor: actor) {
                    appended.append(result)
                }
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        return counted(Outcome(refusal: nil, appended: appended))
    }

    /// The outcome, counted in `livevisits_location_fixes_total{outcome}`: `unchanged`, `appended` (it
    /// appended at least one event), `stale` or `inaccurate`.
    private func counted(_ outcome: Outcome) -> Outcome {
        let name = outcome.refusal?.rawValue ?? (outcome.appended.isEmpty ? "unchanged" : "appended")
        handler.store.metrics.increment(
            "livevisits_location_fixes_total", help: "Technicians' location fixes taken, by what they did.",
            labels: ["outcome": name])
        return outcome
    }

    /// The visit moved on between the decision and the write (or a newer fix decided for it): not appended.
    struct NoLongerDue: Error {}

    /// Appends one decided event through the group commit; nil when it was no longer due.
    private func append(_ decided: Decided, fix: TechnicianFix, technicianId: String, actor: EventMetadata) async throws
        -> VisitCommandResult?
    {
        let rules = self.rules
        let context = VisitCommandContext(
            actor: actor,
            authorize: { [self] state in
                let newer = self.board.withLock { ($0.visits[decided.visitId]?.decidedAt ?? fix.recordedAt) > fix.recordedAt }
                let now = VisitUnderWay(
                    visitId: state.visitId, status: state.status, location: decided.location,
                    kilometresAway: state.kilometresAway)
                guard !newer, state.technician.id == technicianId, rules.event(for: fix, on: now) == decided.event else {
                    throw NoLongerDue()
                }
            })
        let command = VisitCommand(visitId: decided.visitId, event: decided.event, context: context, isCreation: false)
        do {
            let result = try await LostRace.retrying { try await batcher.execute(command) }
            handler.eventsCommitted(count: result.appended.globalPositions.count)
            if result.pushes > 0 { handler.pushes.committed() }
            self.board.withLock { board in
                guard var tracked = board.visits[decided.visitId], tracked.version < result.state.version else { return }
                tracked.version = result.state.version
                tracked.visit.status = result.state.status
                tracked.visit.kilometresAway = result.state.kilometresAway
                board.visits[decided.visitId] = tracked
            }
            return result
        } catch {
            // Put the board back as it was before this decision (unless a newer fix decided since), and read the
            // visit again: a fix sent again after a failure is decided as the first time.
            self.board.withLock { board in
                if var tracked = board.visits[decided.visitId], tracked.decidedAt == fix.recordedAt {
                    tracked.visit = decided.before
                    tracked.decidedAt = nil
                    board.visits[decided.visitId] = tracked
                }
                board.unsure.insert(decided.visitId)
            }
            wakeUp.signal()
            if error is NoLongerDue || error is VisitDecisionError { return nil }
            throw error
        }
    }

    /// Waits until the board is loaded, at most `seconds`; true when it is.
    private func loaded(within seconds: Double) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = self.board.withLock { board -> UInt64? in
                if board.loaded { return nil }
                board.nextWaiter += 1
                board.loadWaiters[board.nextWaiter] = continuation
                return board.nextWaiter
            }
            guard let id else { return continuation.resume(returning: true) }
            // The load resumes the waiter; if it has not when the time is up, this does (whichever removes it).
            Task { [self] in
                try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
                self.board.withLock { $0.loadWaiters.removeValue(forKey: id) }?.resume(returning: false)
            }
        }
    }

    // MARK: following the log

    /// Loads the board, then follows the log until cancelled. A failed pass (the database away) is tried
    /// again on the next wake-up or poll.
    public func run() async throws {
        var reported = false
        while !Task.isCancelled {
            do {
                if board.withLock({ $0.loaded }) {
                    try await follow()
                } else {
                    try await load()
                }
                reported = false
            } catch {
                if !reported { logger.warning("cannot read the visits under way; trying again", ["error": "\(error)"]) }
                reported = true
            }
            try? await Task.sleep(nanoseconds: UInt64(minimumPassSeconds * 1_000_000_000))
            _ = await wakeUp.wait(upTo: pollIntervalSeconds)
        }
    }

    /// How many visits under way the board holds now.
    public var count: Int { board.withLock { $0.visits.count } }

    /// Whether `visitId` is on the board (under way, with a location).
    public func isTracking(_ visitId: String) -> Bool { board.withLock { $0.visits[visitId] != nil } }

    /// The distance the board holds for `visitId` (nil: not on it).
    public func shownKilometres(_ visitId: String) -> Double? {
        board.withLock { $0.visits[visitId]?.visit.kilometresAway }
    }

    /// Whether the first load has finished.
    public var isLoaded: Bool { board.withLock { $0.loaded } }

    /// The first load: every visit under way, from where the log ends now.
    func load() async throws {
        let personalData = handler.personalData
        let (head, found) = try await handler.store.pool.withConnection { c in
            let head = try EventStore.head(on: c)
            let rows = try c.query(
                "SELECT visit_id, state FROM visits WHERE status IN ('enRoute', 'nearby') AND NOT ended")
            let states = try rows.rows.map { try VisitState(snapshot: Array(try $0.string("state").utf8)) }
            return (head, try TechnicianLocations.underWay(states, personalData: personalData, on: c))
        }
        let waiters = board.withLock { board -> [CheckedContinuation<Bool, Never>] in
            for tracked in found { board.put(tracked, visitId: tracked.visit.visitId) }
            board.checkpoint = head
            board.loaded = true
            defer { board.loadWaiters = [:] }
            return Array(board.loadWaiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
        logger.info("visits under way loaded", ["visits.count": String(found.count)])
    }

    /// One pass: the events committed since the last one, and the rows of the visits that may have changed.
    func follow() async throws {
        let personalData = handler.personalData
        let (checkpoint, unsure) = board.withLock { board in
            defer { board.unsure = [] }
            return (board.checkpoint ?? .start, board.unsure)
        }
        do {
            try await handler.store.pool.withConnection { [self] c in
                var touched = unsure
                let at = try EventStore.changes(after: checkpoint, on: c) { events in
                    let changes = events.map { (streamName: $0.streamName, position: $0.position, type: $0.type) }
                    touched.formUnion(self.board.withLock { TechnicianLocations.mayChange(changes, board: $0) })
                }
                // Events committed behind a transaction still open elsewhere in the cluster are not in the log's
                // order yet: their visits' rows are current, so look at those they may have changed now (a visit
                // put enRoute must not wait for a long report to end before its fixes count). With them come any
                // committed since the read above (`eventsNotYetFollowed`).
                let behind = try EventStore.eventsNotYetFollowed(after: at, limit: 1000, on: c).map {
                    (streamName: $0.streamName, position: $0.position, type: $0.type)
                }
                touched.formUnion(self.board.withLock { TechnicianLocations.mayChange(behind, board: $0) })
                var read: [VisitState] = []
                if !touched.isEmpty {
                    let rows = try c.query("SELECT visit_id, state FROM visits WHERE visit_id = ANY(\(Array(touched))::text[])")
                    read = try rows.rows.map { try VisitState(snapshot: Array(try $0.string("state").utf8)) }
                }
                let found = try TechnicianLocations.underWay(read, personalData: personalData, on: c)
                let newer = Dictionary(found.map { ($0.visit.visitId, $0) }) { first, _ in first }
                self.board.withLock { board in
                    for id in touched {
                        if let tracked = newer[id] {
                            // A row older than what this process wrote since is not taken back.
                            if let known = board.visits[id], known.version > tracked.version { continue }
                            var merged = tracked
                            merged.decidedAt = board.visits[id]?.decidedAt
                            board.put(merged, visitId: id)
                        } else if let known = board.visits[id], let state = read.first(where: { $0.visitId == id }),
                            known.version > state.version
                        {
                            continue
                        } else {
                            board.remove(id)
                        }
                    }
                    board.checkpoint = at
                }
            }
        } catch {
            board.withLock { $0.unsure.formUnion(unsure) }
            throw error
        }
    }

    /// The visits among `events`' streams whose rows must be read again: one on the board that the event is
    /// newer than, and one not on it that an `enRoute` or `nearby` may have brought under way.
    static func mayChange(
        _ events: some Sequence<(streamName: String, position: Int64, type: String)>, board: Board
    ) -> Set<String> {
        var ids = Set<String>()
        for event in events {
            guard let id = VisitReadModel.visitId(ofStream: event.streamName) else { continue }
            if let known = board.visits[id] {
                if Int(event.position) > known.version { ids.insert(id) }
            } else if event.type == VisitEventType.enRoute.rawValue || event.type == VisitEventType.nearby.rawValue {
                ids.insert(id)
            }
        }
        return ids
    }

    /// The states under way with a location that opens, as board entries: sealed locations are opened with
    /// their customers' data keys, read in one query.
    static func underWay(_ states: [VisitState], personalData: PersonalDataKeys?, on connection: PostgresConnection) throws
        -> [Tracked]
    {
        let moving = states.filter { ($0.status == .enRoute || $0.status == .nearby) && $0.location != nil }
        guard !moving.isEmpty else { return [] }
        let sealedIds = Set(moving.compactMap { $0.location.flatMap(SealedText.init)?.keyId })
        let keys = try personalData?.dataKeys(ids: Array(sealedIds), on: connection).keys ?? [:]
        return moving.compactMap { state in
            guard let text = state.location else { return nil }
            var plain: String? = text
            if let sealed = SealedText(text) {
                plain = keys[sealed.keyId].flatMap { PersonalDataKeys.open(sealed, with: $0) }
            }
            guard let plain, let location = ServiceLocation(text: plain) else { return nil }
            return Tracked(
                technicianId: state.technician.id,
                visit: VisitUnderWay(
                    visitId: state.visitId, status: state.status, location: location, kilometresAway: state.kilometresAway),
                version: state.version, decidedAt: nil)
        }
    }
}

extension VisitEvent {
    /// The distance and window the event carries, if it is one that carries them.
    var arrivalUpdate: ArrivalUpdate? {
        switch self {
        case .enRoute(let update), .nearby(let update), .finishing(let update): update
        case .progress(let update, _), .reassigned(_, let update): update
        default: nil
        }
    }
}
