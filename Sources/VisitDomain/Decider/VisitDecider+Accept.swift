extension VisitDecider {
    /// Decides an event and, when accepted, folds it and plans its pushes: the one call the
    /// append path needs.
    ///
    /// - Parameters:
    ///   - event: the parsed event (`VisitEvent.scheduled` for `POST /v1/visits`).
    ///   - state: the visit's folded state, `nil` before scheduling.
    ///   - recordedAt: the time the store records (epoch seconds, from the injected clock).
    ///   - rules: the projection rules in force.
    /// - Throws: the `decide` errors, and `.pushTooLarge` when the largest push the event
    ///   implies (a later push-to-start included) is over `rules.maximumPushBytes`.
    public static func accept(
        _ event: VisitEvent, given state: VisitState?, recordedAt: Int, rules: ProjectionRules
    ) throws(VisitDecisionError) -> AcceptedVisitEvent {
        try decide(event, given: state)
        let recorded = RecordedVisitEvent(event, version: (state?.version ?? 0) + 1, recordedAt: recordedAt)
        let next: VisitState
        do {
            next = try evolve(state, recorded)
        } catch {
            // Unreachable once `decide` accepted; refused rather than trusted.
            throw VisitDecisionError(
                code: .illegalTransition, message: error.message, status: state?.status, eventType: event.type)
        }
        let pushes = PushPlanner.pushes(for: next, rules: rules)
        if let largest = PushPlanner.largestPossiblePushSize(among: pushes, for: next, rules: rules),
            largest.bytes > rules.maximumPushBytes
        {
            throw VisitDecisionError(
                code: .pushTooLarge,
                message:
                    "the \(largest.kind.rawValue) push this event implies would be \(largest.bytes) bytes; "
                    + "APNs accepts at most \(rules.maximumPushBytes) (shorten names, address, summary or reason)",
                status: state?.status, eventType: event.type)
        }
        return AcceptedVisitEvent(recorded: recorded, state: next, pushes: pushes)
    }
}
