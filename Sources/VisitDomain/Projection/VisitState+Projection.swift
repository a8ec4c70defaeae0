extension VisitState {
    /// The `ContentState` the activity shows: the technician, the window, the status, the
    /// distance; for a failed visit the reason replaces `vanDescription` (seed "Terminal server failure").
    public var contentState: ContentState {
        ContentState(
            technicianName: technician.name, avatarSymbol: technician.avatarSymbol,
            vanDescription: status == .failed ? (reason ?? technician.vanDescription) : technician.vanDescription,
            arrivalStartEpoch: arrivalWindow.start, arrivalEndEpoch: arrivalWindow.end, status: status,
            kilometresAway: kilometresAway)
    }

    /// The relevance score of the current status (0 once ended).
    public func relevanceScore(_ rules: ProjectionRules) -> Double {
        rules.rule(for: status).relevance
    }

    /// When the current content goes stale: the last event's recorded time plus the status's
    /// interval (not before the window's start where the rule says so). `nil` once ended.
    public func staleDate(_ rules: ProjectionRules) -> Int? {
        let rule = rules.rule(for: status)
        guard !hasEnded, let interval = rule.staleAfterSeconds else { return nil }
        let stale = lastRecordedAt + interval
        return rule.staleNotBeforeArrivalStart ? max(stale, arrivalWindow.start) : stale
    }

    /// The dismissal of an ended visit (`nil` while active). Dates count from the end's
    /// `aps.timestamp` (contract §6 "Ends").
    public func dismissal(_ rules: ProjectionRules) -> VisitDismissal? {
        guard hasEnded else { return nil }
        switch rules.rule(for: status).dismissal ?? .default {
        case .immediate: return .immediate
        case .default: return .default
        case .after(let seconds): return .after(date: apsTimestamp + seconds)
        }
    }

    /// The `aps.dismissal-date` of the end push: the end's timestamp for `immediate`, plus the
    /// delay for `after`, none for `default`.
    public func dismissalDate(_ rules: ProjectionRules) -> Int? {
        switch dismissal(rules) {
        case .immediate: apsTimestamp
        case .after(let date): date
        case .default, nil: nil
        }
    }
}
