/// One entry of a visit's ledger: an activity on a customer's device, or a device a `start` went to
/// (`starting`, no activity id yet). Never a token. Times are epoch seconds.
public struct LiveActivityEntry: Sendable, Hashable {
    public var activityId: String?
    public var deviceId: String?
    public var environment: PushEnvironment?
    public var origin: LiveActivityOrigin
    public var state: LiveActivityState
    /// When it began (its start acknowledged, or its first registration); nil while `starting`.
    public var beganAt: Int64?
    /// When the server renews it; nil when no renewal will happen.
    public var renewsAt: Int64?
    /// When it lapses unless renewed; nil once retired.
    public var lapsesAt: Int64?
    /// The last `aps.timestamp` APNs acknowledged for it.
    public var lastTimestamp: Int64?
    /// When APNs last acknowledged a push to it.
    public var lastAcknowledgedAt: Int64?
    /// Priority-10 pushes it may still get this hour (contract budget); nil while `starting`.
    public var priority10LeftThisHour: Int?
    /// The order of the ledger: `beganAt`, or for a `starting` entry its start's creation.
    public var sortTime: Double

    public init(
        activityId: String?, deviceId: String?, environment: PushEnvironment?, origin: LiveActivityOrigin,
        state: LiveActivityState, beganAt: Int64?, renewsAt: Int64?, lapsesAt: Int64?, lastTimestamp: Int64?,
        lastAcknowledgedAt: Int64?, priority10LeftThisHour: Int?, sortTime: Double
    ) {
        self.activityId = activityId
        self.deviceId = deviceId
        self.environment = environment
        self.origin = origin
        self.state = state
        self.beganAt = beganAt
        self.renewsAt = renewsAt
        self.lapsesAt = lapsesAt
        self.lastTimestamp = lastTimestamp
        self.lastAcknowledgedAt = lastAcknowledgedAt
        self.priority10LeftThisHour = priority10LeftThisHour
        self.sortTime = sortTime
    }
}
