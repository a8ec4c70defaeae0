import Outbox
import Postgres
import VisitDomain

/// The visit side of the outbox: turns the domain's push plans into outbox intents, inside the caller's
/// transaction. The only place that knows both vocabularies.
public struct OutboxPushes: PushEnqueuer {
    public let outbox: Outbox

    public init(outbox: Outbox) {
        self.outbox = outbox
    }

    public func intents(for plans: [PushPlan], state: VisitState) throws -> [PushIntent] {
        let intents = plans.map { OutboxPushes.intent($0, state: state, audience: nil) }
        for intent in intents { try Outbox.check(intent) }
        return intents
    }

    public func statements(for intents: [PushIntent]) throws -> [PostgresQuery] {
        try outbox.enqueueStatements(intents)
    }

    public func committed() { outbox.committed() }

    public func targetsProbe(_ visits: [Outbox.ProbedVisit]) -> PostgresQuery? {
        Outbox.targetsProbe(visits)
    }

    public func targetsFound(_ rows: PostgresRows, count: Int) throws -> [Bool] {
        try Outbox.targetsFound(rows, count: count)
    }

    public func targetsAppeared(_ error: any Error) -> Bool {
        (error as? PostgresError)?.sqlState == Outbox.targetsAppearedSQLState
    }

    /// A catch-up for one newly registered Live Activity (latest state, its own timestamp).
    public func enqueueCatchUp(_ plan: PushPlan, for state: VisitState, activityId: String, on connection: PostgresConnection)
        throws
    {
        _ = try outbox.enqueue([OutboxPushes.intent(plan, state: state, audience: .activity(activityId))], on: connection)
    }

    /// A start for one push-to-start device registered after scheduling. Returns whether one was enqueued
    /// (none for a device the start rules leave out).
    @discardableResult
    public func enqueueLateStart(_ plan: PushPlan, for state: VisitState, deviceId: String, on connection: PostgresConnection)
        throws -> Bool
    {
        let intent = OutboxPushes.intent(plan, state: state, audience: .pushToStartDevice(deviceId))
        return try outbox.enqueue([intent], on: connection).created > 0
    }

    static func intent(_ plan: PushPlan, state: VisitState, audience: PushIntent.Audience?) -> PushIntent {
        let kind: PushIntent.Kind =
            switch plan.kind {
            case .start: .start
            case .update: .update
            case .end: .end
            case .alert: .alert
            }
        let defaultAudience: PushIntent.Audience =
            switch plan.audience {
            case .pushToStartTokens: .pushToStartTokens
            case .liveActivities: .liveActivities
            case .pendingStarts: .pendingStarts
            case .fallbackDevices: .fallbackDevices
            }
        var staleDate: Int64? = nil
        var afterSending: Int64? = nil
        switch plan.expiration {
        case .at(let epoch): staleDate = Int64(epoch)
        case .afterSending(let seconds): afterSending = Int64(seconds)
        case .atOrWhenSent(let epoch):
            // The outbox's form of "the stale date, or the send once that has passed".
            staleDate = Int64(epoch)
            afterSending = 0
        }
        return PushIntent(
            visitId: plan.visitId, customerId: state.customerId, kind: kind, audience: audience ?? defaultAudience,
            priority: plan.priority, apsTimestamp: Int64(plan.apsTimestamp), body: plan.body, staleDate: staleDate,
            expiresAfterSendingSeconds: afterSending, visitVersion: Int64(plan.version),
            eventRecordedAt: Double(state.lastRecordedAt),
            arrivalWindowStart: kind == .start ? Int64(state.arrivalWindow.start) : nil,
            pacingSeconds: audience == nil ? plan.pacingSeconds.map(Double.init) : nil)
    }
}
