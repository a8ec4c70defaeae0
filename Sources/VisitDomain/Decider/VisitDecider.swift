/// The visit's state machine in the decide/evolve shape: `decide` says whether an event may
/// be appended, `evolve` folds a recorded event into the state.
public enum VisitDecider {
    /// The state before any event.
    public static let initialState: VisitState? = nil

    /// Checks `event` against the contract's transition table (§4).
    ///
    /// - Parameter state: the folded state, `nil` before the visit is scheduled.
    /// - Throws: `.alreadyScheduled` (scheduled twice), `.notScheduled` (anything before it),
    ///   `.visitEnded` (anything after an end), `.illegalTransition` (the table says no).
    public static func decide(_ event: VisitEvent, given state: VisitState?) throws(VisitDecisionError) {
        let type = event.type
        guard let state else {
            guard type == .scheduled else {
                throw VisitDecisionError(
                    code: .notScheduled, message: "the visit does not exist: schedule it first", status: nil,
                    eventType: type)
            }
            return
        }
        guard type != .scheduled else {
            throw VisitDecisionError(
                code: .alreadyScheduled, message: "visit \(state.visitId) is already scheduled", status: state.status,
                eventType: type)
        }
        guard !state.hasEnded else {
            throw VisitDecisionError(
                code: .visitEnded, message: "the visit has ended (\(state.status.rawValue)) and accepts no more events",
                status: state.status, eventType: type)
        }
        guard type.legalFrom.contains(state.status) else {
            throw VisitDecisionError(
                code: .illegalTransition,
                message: "\(type.rawValue) is not allowed while the visit is \(state.status.rawValue)",
                status: state.status, eventType: type)
        }
    }

    /// Folds one recorded event into the state. History is fact: transitions are not checked
    /// again, only that the history is possible at all.
    ///
    /// - Throws: `.inconsistentHistory` for an event before `scheduled`, a second `scheduled`,
    ///   or a version that is not the next one.
    public static func evolve(_ state: VisitState?, _ recorded: RecordedVisitEvent) throws(StoredEventError)
        -> VisitState
    {
        let at = recorded.recordedAt
        guard var state else {
            guard case .scheduled(let scheduled) = recorded.event, recorded.version == 1 else {
                throw StoredEventError(
                    code: .inconsistentHistory, eventType: recorded.event.eventType,
                    message:
                        "a visit's history must start with scheduled at version 1 (got version \(recorded.version))")
            }
            return VisitState(
                attributes: scheduled.attributes, customerId: scheduled.customerId, technician: scheduled.technician,
                status: .scheduled, arrivalWindow: scheduled.arrivalWindow, kilometresAway: scheduled.kilometresAway,
                reason: nil, version: 1, lastEventType: .scheduled, scheduledAt: at, lastRecordedAt: at,
                apsTimestamp: at, statusChangedAt: at, statusChangedVersion: 1, location: scheduled.location,
                locale: scheduled.locale)
        }
        guard recorded.version == state.version + 1 else {
            throw StoredEventError(
                code: .inconsistentHistory, eventType: recorded.event.eventType,
                message: "version \(recorded.version) follows version \(state.version)")
        }
        let previousStatus = state.status
        switch recorded.event {
        case .scheduled:
            throw StoredEventError(
                code: .inconsistentHistory, eventType: recorded.event.eventType,
                message: "scheduled appears twice in one visit's history")
        case .enRoute(let update):
            state.status = .enRoute
            state.apply(update)
        case .nearby(let update):
            state.status = .nearby
            state.apply(update)
        case .onSite:
            state.status = .onSite
            state.kilometresAway = 0
            state.arrivalWindow = ArrivalWindow(start: at, end: at)
        case .finishing(let update):
            state.status = .finishing
            state.apply(update)
        case .completed:
            state.status = .completed
        case .cancelled(let reason):
            state.status = .cancelled
            state.reason = reason
        case .failed(let reason):
            state.status = .failed
            state.reason = reason
        case .progress(let update, _):
            state.apply(update)
        case .reassigned(let technician, let update):
            state.status = .scheduled
            state.technician = technician
            state.apply(update)
        }
        state.version = recorded.version
        state.lastEventType = recorded.event.type
        state.lastRecordedAt = at
        state.apsTimestamp = max(at, state.apsTimestamp + 1)
        if state.status != previousStatus {
            state.statusChangedAt = at
            state.statusChangedVersion = recorded.version
        }
        return state
    }

    /// Folds a whole history, oldest first. `nil` for an empty history.
    public static func fold(_ history: some Sequence<RecordedVisitEvent>) throws(StoredEventError) -> VisitState? {
        var state = initialState
        for recorded in history { state = try evolve(state, recorded) }
        return state
    }
}

extension VisitState {
    mutating func apply(_ update: ArrivalUpdate) {
        if let kilometres = update.kilometresAway { kilometresAway = kilometres }
        if let window = update.arrivalWindow { arrivalWindow = window }
    }
}
