/// A fact about a visit, as appended to its stream.
///
/// Status events may carry a new distance and window (`ArrivalUpdate`). `onSite` ignores
/// them: arriving sets the distance to 0 and collapses the window to the event's recorded
/// time (contract §5). `cancelled` may carry a reason; `failed` must (it is shown to the
/// customer in `vanDescription`).
public enum VisitEvent: Sendable, Hashable {
    case scheduled(VisitScheduled)
    case enRoute(ArrivalUpdate)
    case nearby(ArrivalUpdate)
    case onSite
    case finishing(ArrivalUpdate)
    case completed
    case cancelled(reason: String?)
    case failed(reason: String)
    /// A distance or window change that keeps the status (at least one of the two is set); `reason` says
    /// why, when someone gave one (a technician running late), and is sealed like the other reasons.
    case progress(ArrivalUpdate, reason: String? = nil)
    /// A new technician; the visit goes back to `scheduled`.
    case reassigned(Technician, ArrivalUpdate)

    /// The contract's name of this event's type.
    public var type: VisitEventType {
        switch self {
        case .scheduled: .scheduled
        case .enRoute: .enRoute
        case .nearby: .nearby
        case .onSite: .onSite
        case .finishing: .finishing
        case .completed: .completed
        case .cancelled: .cancelled
        case .failed: .failed
        case .progress: .progress
        case .reassigned: .reassigned
        }
    }

    /// The `eventType` string stored with the event (the contract's name).
    public var eventType: String { type.rawValue }
}
