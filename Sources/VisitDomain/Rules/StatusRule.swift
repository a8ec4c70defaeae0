/// What the rules say about one status (one row of the contract's §5 table).
public struct StatusRule: Sendable, Hashable {
    /// `relevance-score` while in this status (0 for the ended ones).
    public var relevance: Double
    /// The alert sent when the visit enters this status (never on `progress`).
    public var alert: AlertContent?
    /// Seconds after the event's recorded time when the content goes stale (active statuses).
    public var staleAfterSeconds: Int?
    /// Whether the stale date is never before the arrival window's start (`scheduled`:
    /// "the later of the arrival window's start and 120 s").
    public var staleNotBeforeArrivalStart: Bool
    /// How the activity leaves the screen (ended statuses).
    public var dismissal: DismissalPolicy?
    /// The ordinary notification (contract §9) a device without a Live Activity of the visit gets when the
    /// visit enters this status; nil: none.
    public var fallbackAlert: FallbackAlert?

    /// A status rule.
    public init(
        relevance: Double, alert: AlertContent? = nil, staleAfterSeconds: Int? = nil,
        staleNotBeforeArrivalStart: Bool = false, dismissal: DismissalPolicy? = nil, fallbackAlert: FallbackAlert? = nil
    ) {
        self.relevance = relevance
        self.alert = alert
        self.staleAfterSeconds = staleAfterSeconds
        self.staleNotBeforeArrivalStart = staleNotBeforeArrivalStart
        self.dismissal = dismissal
        self.fallbackAlert = fallbackAlert
    }
}
