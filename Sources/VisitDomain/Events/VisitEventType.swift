/// The name of an event type: the contract's `type` / `eventType` strings.
public enum VisitEventType: String, Sendable, Hashable, CaseIterable {
    case scheduled, enRoute, nearby, onSite, finishing, completed, cancelled, failed, progress, reassigned

    /// Whether a technician (on a visit assigned to them) may post this type (contract §6
    /// "Technicians"); `cancelled` and `reassigned` are the dispatcher's, and `scheduled`
    /// is only created by `POST /v1/visits`.
    public var technicianMayPost: Bool {
        switch self {
        case .enRoute, .nearby, .onSite, .finishing, .completed, .failed, .progress: true
        case .scheduled, .cancelled, .reassigned: false
        }
    }

    /// The types a technician may post.
    public static let postableByTechnician: Set<VisitEventType> = Set(allCases.filter(\.technicianMayPost))

    /// The status an event of this type moves the visit to (`nil` for `progress`, which keeps it). A status
    /// event's type and the status it leads to share their name; a reassignment starts the visit over.
    public var targetStatus: VisitStatus? {
        switch self {
        case .reassigned: .scheduled
        case .progress: nil
        case .scheduled, .enRoute, .nearby, .onSite, .finishing, .completed, .cancelled, .failed:
            VisitStatus(rawValue: rawValue)
        }
    }

    /// The statuses this event is legal from (contract §4 transition table). `scheduled`
    /// is legal only before the visit exists, which no status expresses: empty here.
    public var legalFrom: Set<VisitStatus> {
        switch self {
        case .scheduled: []
        case .enRoute: [.scheduled]
        case .nearby: [.scheduled, .enRoute]
        case .onSite: [.scheduled, .enRoute, .nearby]
        case .finishing: [.onSite]
        case .completed: [.onSite, .finishing]
        case .cancelled, .failed, .progress: Set(VisitStatus.allCases.filter { !$0.hasEnded })
        case .reassigned: [.scheduled, .enRoute, .nearby]
        }
    }
}
