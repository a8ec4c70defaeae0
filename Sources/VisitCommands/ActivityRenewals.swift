import Outbox
import Postgres
import VisitDomain
import VisitProjections

/// The visit side of the outbox's 8-hour renewal (contract §9): the visit's current state, from the read
/// model, as the end to each old activity and the start to the customer's push-to-start tokens.
public struct ActivityRenewals: ActivityRenewer {
    public let rules: ProjectionRules

    public init(rules: ProjectionRules) {
        self.rules = rules
    }

    public func renewal(visitId: String, activityIds: [String], now: Double, on connection: PostgresConnection) throws
        -> ActivityRenewal?
    {
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
            customerId: state.customerId, ends: activityIds.map { renewing(plans.end, .activity($0)) },
            start: renewing(plans.start, .renewalStart(activityIds.first ?? visitId)))
    }
}
