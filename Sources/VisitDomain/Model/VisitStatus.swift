/// Where a visit stands. Raw values are the contract's and the seed's `VisitStatus` names,
/// and travel as such in `content-state.status`.
public enum VisitStatus: String, Sendable, Hashable, CaseIterable {
    case scheduled, enRoute, nearby, onSite, finishing, completed, cancelled, failed

    /// `completed`, `cancelled` and `failed` end the visit: it accepts no more events.
    public var hasEnded: Bool {
        switch self {
        case .completed, .cancelled, .failed: true
        default: false
        }
    }
}
