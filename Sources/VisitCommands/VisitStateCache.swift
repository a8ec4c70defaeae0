import Runtime
import VisitDomain

/// The visit states this process's command batches committed, by visit, so that the next command on a visit
/// need not read and parse its snapshot: the batch's state read sends the version known here and PostgreSQL
/// answers the snapshot only when the visit's row is at another version (`VisitCommandHandler.currentStates`).
///
/// Only a committed state goes in, and it is used only when the read model and the stream are both at its
/// version. A visit's state is a pure fold of its events (no rule goes into it), and a stream position is
/// written once, so the state at a version is the same whoever reads it — another process writing the visit
/// moves its version on, and a replay rewrites the row with the same state. At most `capacity` states (about
/// a kilobyte each), in two generations of half as many: states go into the newer one, and when it is full the
/// older one is dropped and the newer one becomes the older. So a state written again within the last
/// `capacity / 2` states written is never lost, and the states of the visits in use are never all dropped at
/// once (which would make every command read its state again for a while, in the middle of the load).
///
/// A command batch may also decide on a remembered state without reading the visit at all (`assumed`): its
/// write then checks it, since a visit another process wrote has its next position taken and the batch fails
/// and is redone on read states. That is a bet that this process is the visit's only writer; one lost bet
/// (`forget(_:distrusting:)`) stops it for `distrustSeconds`, so several processes writing the same visits
/// read them as before instead of failing batch after batch.
///
/// With a state goes what the batch's targets probe last said of the visit (`hasTargets`): whether a push of
/// it could have a target at all. A visit known to have none is written without its pushes, and the same
/// transaction checks that it still has none (`PushEnqueuer.targetsProbe`), so the knowledge is a hint, not
/// a bet: wrong, it costs the batch a redo.
public final class VisitStateCache: Sendable {
    private struct Entry {
        var state: VisitState
        var hasTargets: Bool?
    }

    public let capacity: Int
    /// How long no state is assumed after a batch decided on one failed.
    public let distrustSeconds: Double
    private struct Generations {
        var newer: [String: Entry] = [:]
        var older: [String: Entry] = [:]

        subscript(visitId: String) -> Entry? {
            newer[visitId] ?? older[visitId]
        }

        var count: Int { newer.count + older.count }

        /// Changes the entry of `visitId` where it is.
        mutating func update(_ visitId: String, _ change: (inout Entry) -> Void) {
            if newer[visitId] != nil {
                change(&newer[visitId]!)
            } else if older[visitId] != nil {
                change(&older[visitId]!)
            }
        }

        /// Changes every entry that `matches`, in either generation.
        mutating func updateEach(where matches: (Entry) -> Bool, _ change: (inout Entry) -> Void) {
            for (id, entry) in newer where matches(entry) { change(&newer[id]!) }
            for (id, entry) in older where matches(entry) { change(&older[id]!) }
        }

        mutating func remove(_ visitId: String) {
            newer[visitId] = nil
            older[visitId] = nil
        }
    }

    private let states = Lock(Generations())
    private let distrustedUntil = Lock<ContinuousClock.Instant?>(nil)

    public init(capacity: Int = 16_384, distrustSeconds: Double = 10) {
        self.capacity = max(0, capacity)
        self.distrustSeconds = max(0, distrustSeconds)
    }

    /// The state remembered for `visitId`, to decide on without reading it, unless a bet on a remembered
    /// state was lost in the last `distrustSeconds`.
    func assumed(_ visitId: String) -> VisitState? {
        assuming ? state(visitId) : nil
    }

    /// Whether `assumed(visitId)` would answer a state now (without copying it).
    func isAssumed(_ visitId: String) -> Bool {
        assuming && states.withLock { $0[visitId] != nil }
    }

    /// Forgets these visits' states (a batch that wrote them failed); `distrusting`: and assumes none for
    /// `distrustSeconds`.
    func forget(_ visitIds: some Sequence<String>, distrusting: Bool) {
        states.withLock { known in
            for id in visitIds { known.remove(id) }
        }
        if distrusting {
            let until = ContinuousClock.now + .milliseconds(Int64(distrustSeconds * 1000))
            distrustedUntil.withLock { $0 = until }
        }
    }

    /// These visits have a push target now (one was registered through this process): their next commands are
    /// written with their pushes, without a probe.
    public func targetsRegistered(visits visitIds: some Sequence<String>) {
        states.withLock { known in
            for id in visitIds { known.update(id) { $0.hasTargets = true } }
        }
    }

    /// This customer has a push target now (a push-to-start or notification token of theirs was registered
    /// through this process), and so has every visit of theirs: the same for each one known here. (The customer
    /// of a visit is not kept apart, so this looks at every state; such registrations are rare.)
    public func targetsRegistered(customer customerId: String) {
        states.withLock { known in
            known.updateEach(where: { $0.hasTargets != true && $0.state.customerId == customerId }) { $0.hasTargets = true }
        }
    }

    /// Whether states are assumed now: no bet lost in the last `distrustSeconds`.
    public var assuming: Bool {
        guard let until = distrustedUntil.withLock({ $0 }) else { return true }
        return ContinuousClock.now >= until
    }

    /// The state known for `visitId`, if any.
    public func state(_ visitId: String) -> VisitState? {
        states.withLock { $0[visitId]?.state }
    }

    /// Whether a push of `visitId` could have a target, as the last probe said (nil: not known here).
    public func hasTargets(_ visitId: String) -> Bool? {
        states.withLock { $0[visitId]?.hasTargets }
    }

    /// The versions known for `visitIds`, in order (nil where none is known).
    func versions(_ visitIds: [String]) -> [Int?] {
        states.withLock { known in visitIds.map { known[$0]?.state.version } }
    }

    /// Remembers committed states (a later one of a visit replaces an earlier one), and what the same
    /// transaction's targets probe said of their visits (`targets`; a visit not in it keeps what was known).
    func remember(_ committed: some Sequence<VisitState>, targets: [String: Bool] = [:]) {
        guard capacity > 0 else { return }
        let generation = max(1, capacity / 2)
        states.withLock { known in
            for state in committed {
                let visit = state.attributes.visitId
                let entry = Entry(state: state, hasTargets: targets[visit] ?? known[visit]?.hasTargets)
                known.older[visit] = nil
                if known.newer.count >= generation && known.newer[visit] == nil {
                    // The older generation's table is kept for the next newer one (no table grown again).
                    swap(&known.older, &known.newer)
                    known.newer.removeAll(keepingCapacity: true)
                }
                known.newer[visit] = entry
            }
        }
    }

    /// How many states are known now.
    public var count: Int { states.withLock { $0.count } }
}
