/// One push the outbox should deliver, as the caller's transaction decided it: what to send
/// (the exact `aps` body), to whom (an audience the outbox resolves into targets) and when.
/// The outbox knows nothing of visits beyond these values.
public struct PushIntent: Sendable, Hashable {
    /// `aps.event`, or `alert` for an ordinary notification (contract §9: `apns-push-type: alert`).
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case start, update, end, alert
    }

    /// Who receives the push. Targets are resolved at enqueue time; tokens at send time.
    public enum Audience: Sendable, Hashable {
        /// Every registered, live (not retired) Live Activity of the visit.
        case liveActivities
        /// Every push-to-start token of the customer (a `start`).
        case pushToStartTokens
        /// One Live Activity (a catch-up after registration).
        case activity(String)
        /// One push-to-start device of the customer (a late start).
        case pushToStartDevice(String)
        /// The start targets of the visit whose start is still pending (deferred, or in backoff with a
        /// known outcome): the new start supersedes it (a new delivery, new apns-id, its own due time).
        /// Nothing for a target whose start went out, may have gone out, or never was.
        case pendingStarts
        /// The customer's devices with a notification token that follow the visit without a Live Activity
        /// (contract §9): Live Activities off on the device, or neither a push-to-start token nor a Live
        /// Activity of the visit registered with its device id. An `alert`.
        case fallbackDevices
        /// The start that renews a Live Activity at `activityRenewalSeconds`: to the push-to-start token of
        /// the renewed activity's `device`, or, for an activity without a device, of every device of the
        /// customer that shows no other activity of the visit and did not dismiss one. Its targets are this
        /// renewal's own (named by the key, the renewed activity), so the visit's first start does not block
        /// it; at most one per renewal and token.
        case renewalStart(key: String, device: String?)
    }

    public var visitId: String
    public var customerId: String
    public var kind: Kind
    public var audience: Audience
    /// `apns-priority`: 5 or 10.
    public var priority: Int
    /// `aps.timestamp` of the body (strictly increasing per visit; a catch-up repeats it).
    public var apsTimestamp: Int64
    /// The exact body, `{"aps":{…}}`, UTF-8 JSON.
    public var body: [UInt8]
    /// Updates: the stale date, which is also the `apns-expiration`; past it the update is not sent —
    /// unless `expiresAfterSendingSeconds` is set too (a catch-up).
    public var staleDate: Int64?
    /// Start/end: `apns-expiration` is this many seconds after sending (nil: the worker's default, 4 h).
    /// An update with it (a catch-up, 0) is measured from the send: never expired before it is sent, its
    /// `apns-expiration` the later of its stale date and the send + this; only a newer state stops it.
    public var expiresAfterSendingSeconds: Int64?
    /// The visit version whose state the body carries.
    public var visitVersion: Int64
    /// When the event behind it was recorded (epoch seconds), for the append → APNs ack delay metric.
    public var eventRecordedAt: Double
    /// Not sent before this time (epoch seconds). For a deferred start; nil: as soon as possible.
    public var notBefore: Double?
    /// For a `start` without `notBefore`: the arrival window's start (epoch seconds); the outbox then
    /// holds the start until `arrivalWindowStart − startLeadTime` (`OutboxConfiguration`).
    public var arrivalWindowStart: Int64?
    /// An update that reaches each target at most once per this many seconds (contract §8's progress
    /// cadence): it is due no earlier than that after the target's last paced update was sent, and as the
    /// newest pending state it supersedes the one waiting. nil: not paced.
    public var pacingSeconds: Double?

    public init(
        visitId: String, customerId: String, kind: Kind, audience: Audience, priority: Int, apsTimestamp: Int64,
        body: [UInt8], staleDate: Int64? = nil, expiresAfterSendingSeconds: Int64? = nil, visitVersion: Int64,
        eventRecordedAt: Double, notBefore: Double? = nil, arrivalWindowStart: Int64? = nil, pacingSeconds: Double? = nil
    ) {
        self.visitId = visitId
        self.customerId = customerId
        self.kind = kind
        self.audience = audience
        self.priority = priority
        self.apsTimestamp = apsTimestamp
        self.body = body
        self.staleDate = staleDate
        self.expiresAfterSendingSeconds = expiresAfterSendingSeconds
        self.visitVersion = visitVersion
        self.eventRecordedAt = eventRecordedAt
        self.notBefore = notBefore
        self.arrivalWindowStart = arrivalWindowStart
        self.pacingSeconds = pacingSeconds
    }
}
