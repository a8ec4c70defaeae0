/// Turns visit states into the pushes they imply (contract §5 rule table and §6).
///
/// Every text a push carries is in the visit's language: each entry point plans with
/// `rules.localized(for: state.locale)`.
public enum PushPlanner {
    /// The pushes implied by the event that produced `state` (its last event):
    /// - `scheduled`: a `start` to push-to-start tokens and an `update` to activities already registered;
    /// - a status change (`enRoute`, `nearby`, `onSite`, `finishing`): an `update` with the status's alert;
    /// - `progress`, `reassigned`: an `update` without alert;
    /// - `completed`, `cancelled`, `failed`: an `end` (the outbox cancels starts still waiting).
    ///
    /// After `scheduled`, every event of an active visit also re-plans the `start` for the starts still
    /// waiting to go out (audience `pendingStarts`): every push carries the full current state, so a start
    /// deferred until the arrival window does not go out with the booking-time state and window.
    ///
    /// A status change whose rule has a `fallbackAlert` also plans an ordinary notification to the
    /// customer's devices without a Live Activity of the visit (contract §9); `progress` and `reassigned`
    /// never do.
    public static func pushes(for state: VisitState, rules: ProjectionRules) -> [PushPlan] {
        let rules = rules.localized(for: state.locale)
        let fallbacks = fallback(state, rules: rules).map { [$0] } ?? []
        if state.hasEnded { return [end(state, rules: rules, isCatchUp: false)] + fallbacks }
        let alert: AlertContent? =
            switch state.lastEventType {
            case .progress, .reassigned: nil
            default: state.lastEventChangedStatus ? rules.rule(for: state.status).alert : nil
            }
        var updatePlan = update(state, rules: rules, alert: alert, isCatchUp: false)
        // Distance updates come far more often than a Live Activity should be pushed (contract §8); a status
        // change is never paced.
        if state.lastEventType == .progress, rules.progressIntervalSeconds > 0 {
            updatePlan.pacingSeconds = rules.progressIntervalSeconds
        }
        if state.lastEventType == .scheduled {
            return [start(state, rules: rules, isCatchUp: false), updatePlan] + fallbacks
        }
        var replacement = start(state, rules: rules, isCatchUp: false)
        replacement.audience = .pendingStarts
        return [updatePlan, replacement] + fallbacks
    }

    /// The ordinary notification of a status change whose rule gives a `fallbackAlert`: priority 10,
    /// `apns-expiration` one hour after sending, §9's body.
    static func fallback(_ state: VisitState, rules: ProjectionRules) -> PushPlan? {
        switch state.lastEventType {
        case .progress, .reassigned: return nil
        default: break
        }
        guard state.lastEventChangedStatus || state.lastEventType == .scheduled,
            let alert = rules.rule(for: state.status).fallbackAlert
        else { return nil }
        return PushPlan(
            kind: .alert, audience: .fallbackDevices, visitId: state.visitId, version: state.version,
            priority: 10, alert: AlertContent(title: alert.title, body: alert.body, sound: "default"),
            apsTimestamp: state.apsTimestamp, staleDate: nil, relevanceScore: nil, dismissalDate: nil,
            expiration: .afterSending(seconds: 3600), isCatchUp: false,
            body: alert.body(visitId: state.visitId, status: state.status))
    }

    /// The latest state for a newly registered (or rotated) Live Activity token: an `update`
    /// without alert, or the `end` once the visit has ended; it repeats the state's own
    /// `aps.timestamp`, so an activity that already has this state ignores it. The update is sent
    /// even past its stale date (`PushExpiration.atOrWhenSent`): it is still the latest state.
    public static func catchUp(for state: VisitState, rules: ProjectionRules) -> PushPlan {
        let rules = rules.localized(for: state.locale)
        return state.hasEnded
            ? end(state, rules: rules, isCatchUp: true)
            : update(state, rules: rules, alert: nil, isCatchUp: true)
    }

    /// The `start` for a push-to-start token registered after scheduling, while the visit is
    /// active (`nil` once ended). It carries the current state and the start alert.
    public static func lateStart(for state: VisitState, rules: ProjectionRules) -> PushPlan? {
        state.hasEnded ? nil : start(state, rules: rules.localized(for: state.locale), isCatchUp: true)
    }

    /// The renewal of a still-active visit's Live Activity at `activityRenewalSeconds` (contract §9; nil once
    /// ended): an `end` whose `dismissal-date` is its own `aps.timestamp` (dismissed at once), then a `start`
    /// with the current state one second later. The end's timestamp is a second before `now` (so the visit's
    /// next event, recorded at `now` or later, is newer than the start), and after the state's own.
    public static func renewal(for state: VisitState, rules: ProjectionRules, now: Int) -> (end: PushPlan, start: PushPlan)? {
        guard !state.hasEnded else { return nil }
        let rules = rules.localized(for: state.locale)
        var ending = state
        ending.apsTimestamp = max(now - 1, state.apsTimestamp + 1)
        var starting = ending
        starting.apsTimestamp += 1
        return (
            end(ending, rules: rules, isCatchUp: false, dismissalDate: ending.apsTimestamp),
            start(starting, rules: rules, isCatchUp: false, alert: rules.renewalAlert)
        )
    }

    /// Every body the event behind `state` may cause: its pushes and, while active, the start
    /// a later push-to-start token would get. The 4 KB budget is checked on the largest.
    public static func largestPossiblePush(for state: VisitState, rules: ProjectionRules) -> PushPlan? {
        let rules = rules.localized(for: state.locale)
        return largestPossiblePush(among: pushes(for: state, rules: rules), for: state, rules: rules)
    }

    /// The same, given the pushes already planned for `state` (`pushes(for:rules:)`), so they are not built
    /// twice. A start among them has the very body a later push-to-start token would get.
    public static func largestPossiblePush(among pushes: [PushPlan], for state: VisitState, rules: ProjectionRules)
        -> PushPlan?
    {
        let rules = rules.localized(for: state.locale)
        var candidates = pushes
        if !pushes.contains(where: { $0.kind == .start }), let start = lateStart(for: state, rules: rules) {
            candidates.append(start)
        }
        // A renewal's start differs from the booking's only by its alert: built when that alert is the larger.
        if !state.hasEnded, renewalAlertExtraBytes(rules) > 0 {
            candidates.append(start(state, rules: rules, isCatchUp: false, alert: rules.renewalAlert))
        }
        return candidates.max { $0.bodySize < $1.bodySize }
    }

    /// The kind and size of `largestPossiblePush(among:for:rules:)`, without building a body it does not need:
    /// the renewal's start is measured as the start with the renewal's alert in place of the booking's. What
    /// accepting an event checks, once per event.
    public static func largestPossiblePushSize(among pushes: [PushPlan], for state: VisitState, rules: ProjectionRules)
        -> (kind: PushKind, bytes: Int)?
    {
        let rules = rules.localized(for: state.locale)
        var candidates = pushes
        if !pushes.contains(where: { $0.kind == .start }), let start = lateStart(for: state, rules: rules) {
            candidates.append(start)
        }
        guard let largest = candidates.max(by: { $0.bodySize < $1.bodySize }) else { return nil }
        var result = (kind: largest.kind, bytes: largest.bodySize)
        if !state.hasEnded, let start = candidates.first(where: { $0.kind == .start }) {
            let renewal = start.bodySize + renewalAlertExtraBytes(rules)
            if renewal > result.bytes { result = (.start, renewal) }
        }
        return result
    }

    /// How many bytes longer a start is with the renewal's alert than with the booking's (0 when not longer).
    static func renewalAlertExtraBytes(_ rules: ProjectionRules) -> Int {
        let booking = rules.rule(for: .scheduled).alert ?? AlertContent(title: "", body: "")
        return max(0, rules.renewalAlert.json.serialized().count - booking.json.serialized().count)
    }

    /// A `start` with the current state; its alert is the booking's unless given (a renewal's is its own).
    static func start(_ state: VisitState, rules: ProjectionRules, isCatchUp: Bool, alert: AlertContent? = nil) -> PushPlan {
        let alert = alert ?? rules.rule(for: .scheduled).alert ?? AlertContent(title: "", body: "")
        let staleDate = rules.startIncludesStaleDate ? state.staleDate(rules) : nil
        let relevance = rules.startIncludesRelevanceScore ? state.relevanceScore(rules) : nil
        var aps: [JSONMember] = [
            JSONMember("timestamp", .number(Double(state.apsTimestamp))),
            JSONMember("event", .string(PushKind.start.rawValue)),
            JSONMember("attributes-type", .string("ServiceVisitAttributes")),
            JSONMember("attributes", state.attributes.apsJSON),
            JSONMember("content-state", state.contentState.json),
        ]
        if let staleDate { aps.append(JSONMember("stale-date", .number(Double(staleDate)))) }
        if let relevance { aps.append(JSONMember("relevance-score", .number(relevance))) }
        aps.append(JSONMember("alert", alert.json))
        aps.append(JSONMember("input-push-token", .number(1)))
        return PushPlan(
            kind: .start, audience: .pushToStartTokens, visitId: state.visitId, version: state.version,
            priority: rules.startPriority, alert: alert, apsTimestamp: state.apsTimestamp, staleDate: staleDate,
            relevanceScore: relevance, dismissalDate: nil,
            expiration: .afterSending(seconds: rules.startEndExpirationSeconds), isCatchUp: isCatchUp,
            body: JSONValue.object([JSONMember("aps", .object(aps))]).serialized())
    }

    static func update(_ state: VisitState, rules: ProjectionRules, alert: AlertContent?, isCatchUp: Bool) -> PushPlan {
        let staleDate = state.staleDate(rules) ?? state.lastRecordedAt
        let relevance = state.relevanceScore(rules)
        var aps: [JSONMember] = [
            JSONMember("timestamp", .number(Double(state.apsTimestamp))),
            JSONMember("event", .string(PushKind.update.rawValue)),
            JSONMember("content-state", state.contentState.json),
            JSONMember("stale-date", .number(Double(staleDate))),
            JSONMember("relevance-score", .number(relevance)),
        ]
        if let alert { aps.append(JSONMember("alert", alert.json)) }
        return PushPlan(
            kind: .update, audience: .liveActivities, visitId: state.visitId, version: state.version,
            priority: alert == nil ? rules.quietPriority : rules.alertPriority, alert: alert,
            apsTimestamp: state.apsTimestamp, staleDate: staleDate, relevanceScore: relevance, dismissalDate: nil,
            expiration: isCatchUp ? .atOrWhenSent(staleDate) : .at(staleDate), isCatchUp: isCatchUp,
            body: JSONValue.object([JSONMember("aps", .object(aps))]).serialized())
    }

    /// - Parameter dismissalDate: when the ended activity goes away; by default the rules' for the state.
    static func end(_ state: VisitState, rules: ProjectionRules, isCatchUp: Bool, dismissalDate: Int?? = nil) -> PushPlan {
        let dismissalDate = dismissalDate ?? state.dismissalDate(rules)
        var aps: [JSONMember] = [
            JSONMember("timestamp", .number(Double(state.apsTimestamp))),
            JSONMember("event", .string(PushKind.end.rawValue)),
        ]
        if let dismissalDate { aps.append(JSONMember("dismissal-date", .number(Double(dismissalDate)))) }
        aps.append(JSONMember("content-state", state.contentState.json))
        return PushPlan(
            kind: .end, audience: .liveActivities, visitId: state.visitId, version: state.version,
            priority: rules.endPriority, alert: nil, apsTimestamp: state.apsTimestamp, staleDate: nil,
            relevanceScore: nil, dismissalDate: dismissalDate,
            expiration: .afterSending(seconds: rules.startEndExpirationSeconds), isCatchUp: isCatchUp,
            body: JSONValue.object([JSONMember("aps", .object(aps))]).serialized())
    }
}
