/// One push an accepted event (or a registration) implies, with everything the outbox
/// needs except the tokens, and the exact `aps` body bytes.
public struct PushPlan: Sendable, Hashable {
    /// `start`, `update` or `end`.
    public var kind: PushKind
    /// Which tokens receive it.
    public var audience: PushAudience
    /// The visit.
    public var visitId: String
    /// The visit version whose state it carries.
    public var version: Int
    /// `apns-priority`: 10 with an alert and for start/end, 5 otherwise (by the rules).
    public var priority: Int
    /// The alert, if any.
    public var alert: AlertContent?
    /// `aps.timestamp`: the state's timestamp (strictly increasing per visit; repeated by catch-ups).
    public var apsTimestamp: Int
    /// `aps.stale-date` (updates; starts when the rules say so).
    public var staleDate: Int?
    /// `aps.relevance-score` (updates; starts when the rules say so).
    public var relevanceScore: Double?
    /// `aps.dismissal-date` (ends, by the dismissal policy).
    public var dismissalDate: Int?
    /// The `apns-expiration` rule.
    public var expiration: PushExpiration
    /// Whether it repeats an existing state for a newly registered token (catch-up or late start).
    public var isCatchUp: Bool
    /// The full body, `{"aps":{…}}`, compact UTF-8.
    public var body: [UInt8]
    /// An update caused by `progress`: it reaches each target at most once per this many seconds (the
    /// rules' `progressIntervalSeconds`, contract §8); a newer state waits for the interval's end. nil: at once.
    public var pacingSeconds: Int? = nil

    /// The body's size in bytes (what the 4 KB budget measures).
    public var bodySize: Int { body.count }
}
