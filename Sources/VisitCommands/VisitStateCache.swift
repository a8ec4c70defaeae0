import Synchronization
import VisitDomain

/// The visit states this process's command batches committed, by visit, so that the next command on a visit
/// need not read and parse its snapshot: the batch's state read sends the version known here and PostgreSQL
/// answers the snapshot only when the visit's row is at another version (`VisitCommandHandler.currentStates`).
///
/// Only a committed state goes in, and it is used only when the read model and the stream are both at its
/// version. A visit's state is a pure fold of its events (no rule goes into it), and a stream position is
/// written once, so the state at a version is the same whoever reads it — another process writing the visit
/// moves its version on, and a replay rewrites the row with the same state. At most `capacity` states (about
/// a kilobyte each); when full it starts over.
public final class VisitStateCache: Sendable {
    public let capacity: Int
    private let states = Mutex<[String: VisitState]>([:])

    public init(capacity: Int = 16_384) {
        self.capacity = max(0, capacity)
    }

    /// The state known for `visitId`, if any.
    public func state(_ visitId: String) -> VisitState? {
        states.withLock { $0[visitId] }
    }

    /// The versions known for `visitIds`, in order (nil where none is known).
    func versions(_ visitIds: [String]) -> [Int?] {
        states.withLock { known in visitIds.map { known[$0]?.version } }
    }

    /// Remembers committed states (a later one of a visit replaces an earlier one).
    func remember(_ committed: some Sequence<VisitState>) {
        guard capacity > 0 else { return }
        states.withLock { known in
            for state in committed {
                if known.count >= capacity && known[state.attributes.visitId] == nil { known.removeAll(keepingCapacity: true) }
                known[state.attributes.visitId] = state
            }
        }
    }

    /// How many states are known now.
    public var count: Int { states.withLock { $0.count } }
}
