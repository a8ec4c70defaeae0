import LiveActivityLedger
import Outbox
import Postgres
import VisitDomain
import VisitProjections

/// The visit side of the outbox's renewal: the visit's current state, from the read model, as the end to
/// each renewed activity and the start (with the rules' `renewalAlert`) to the push-to-start tokens.
public struct ActivityRenewals: ActivityRenewer {
    public let rules: ProjectionRules

    public init(rules: ProjectionRules) {
        self.rules = rules
    }

    public func renewal(visitId: String, now: Double, on connection: PostgresConnection) throws -> ActivityRenewal? {
        guard let state = try VisitReadModel.state(visitId: visitId, on: connection),
            let plans = PushPlanner.renewal(for: state, rules: rules, now: Int(now))
        else { return nil }
        // Not caused by an event: the append → ack delay is measured from now, not from the last event.
        func renewing(_ plan: PushPlan, _ audience: PushIntent.Audience) -> PushIntent {
            var intent = OutboxPushes.intent(plan, state: state, audience: audience)
            intent.eventRecordedAt = now
            return intent
        }
        return ActivityRenewal(
            customerId: state.customerId, end: renewing(plans.end, .activity(visitId)),
            start: renewing(plans.start, .renewalStart(key: visitId, device: nil)))
    }
}

extension LiveActivityLedger.Settings {
    /// The ledger's settings from the projection rules: renewal, lifetime, cap and the push budget.
    public init(rules: ProjectionRules) {
        self.init(
            renewalSeconds: Double(rules.activityRenewalSeconds), lifetimeSeconds: Double(rules.activityLifetimeSeconds),
            maxRenewals: rules.maxRenewals, priority10PerHour: rules.budget.priority10PerHour,
            priority10PerHourFrequent: rules.budget.priority10PerHourFrequent)
    }
}
