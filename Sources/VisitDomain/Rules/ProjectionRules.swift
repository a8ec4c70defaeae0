/// The data that turns a visit's status into what its Live Activity shows and how it is
/// pushed: relevance, alert, stale interval, dismissal policy, APNs priorities and expiry.
///
/// Parsed from `rules.json` (`ProjectionRules+Parsing.swift`), which `VisitProjections` reads at start
/// from `$LIVEVISITS_PROJECTIONS_DIR`; `contractDefault` is the contract's §5 table and is
/// what `Projections/rules.json` holds.
public struct ProjectionRules: Sendable, Hashable {
    /// One rule per status (all eight are required).
    public var statuses: [VisitStatus: StatusRule]
    /// `apns-priority` of an update that carries an alert.
    public var alertPriority: Int
    /// `apns-priority` of an update without an alert.
    public var quietPriority: Int
    /// `apns-priority` of a start.
    public var startPriority: Int
    /// `apns-priority` of an end.
    public var endPriority: Int
    /// `apns-expiration` of starts and ends: this many seconds after sending.
    public var startEndExpirationSeconds: Int
    /// Whether a start carries `stale-date` (contract §5: "may also carry").
    public var startIncludesStaleDate: Bool
    /// Whether a start carries `relevance-score`.
    public var startIncludesRelevanceScore: Bool
    /// The largest `aps` body, bytes (APNs: 4096 for Live Activities).
    public var maximumPushBytes: Int
    /// The priority-10 allowance per target and hour (contract §8).
    public var budget: PushBudget
    /// Updates caused by `progress` reach one target at most once per this many seconds (contract §8).
    public var progressIntervalSeconds: Int
    /// An activity of a still-active visit is renewed (end, then a new start) this long after it began,
    /// before iOS ends it at 8 hours (contract §9).
    public var activityRenewalSeconds: Int
    /// A visit's broadcast channel is deleted at APNs this long after its `end` broadcast was
    /// acknowledged (`"channels": {"deleteAfterEndSeconds": N}`, contract §7).
    public var channelDeleteAfterEndSeconds: Int = 3600
    /// The alert of a renewal's `start` (contract §13): never the booking's, whatever the status.
    public var renewalAlert = AlertContent(title: "Still on its way", body: "Your visit continues here.")
    /// A visit's activities are renewed at most this many times (each renewal gives another
    /// `activityRenewalSeconds` of tracking; the default 2 is 24 hours).
    public var maxRenewals: Int = 2
    /// An activity that is not renewed lapses this long after it began (iOS ends it at 8 hours):
    /// nothing more is pushed to it and its device gets the fallback notifications. Greater than
    /// `activityRenewalSeconds`.
    public var activityLifetimeSeconds: Int = 28_800
    /// What technicians' location fixes do to their visits under way (`"location": {…}`).
    public var location = LocationRules()
    /// The tracking page's words (`"trackingPage": {…}`), English unless the rules give others.
    public var trackingLabels = TrackingPageLabels.english
    /// The rules of each language the rules give texts for (`"locales"`), by lower-cased tag: these rules
    /// with that language's texts in place of the default ones (`localized(for:)`). Empty in those rules.
    public internal(set) var locales: [String: ProjectionRules] = [:]

    /// Rules from their parts.
    public init(
        statuses: [VisitStatus: StatusRule], alertPriority: Int = 10, quietPriority: Int = 5, startPriority: Int = 10,
        endPriority: Int = 10, startEndExpirationSeconds: Int = 14_400, startIncludesStaleDate: Bool = true,
        startIncludesRelevanceScore: Bool = true, maximumPushBytes: Int = 4096, budget: PushBudget = PushBudget(),
        progressIntervalSeconds: Int = 15, activityRenewalSeconds: Int = 27_000
    ) {
        self.statuses = statuses
        self.alertPriority = alertPriority
        self.quietPriority = quietPriority
        self.startPriority = startPriority
        self.endPriority = endPriority
        self.startEndExpirationSeconds = startEndExpirationSeconds
        self.startIncludesStaleDate = startIncludesStaleDate
        self.startIncludesRelevanceScore = startIncludesRelevanceScore
        self.maximumPushBytes = maximumPushBytes
        self.budget = budget
        self.progressIntervalSeconds = progressIntervalSeconds
        self.activityRenewalSeconds = activityRenewalSeconds
    }

    /// The rule of `status` (validation guarantees every status has one).
    public func rule(for status: VisitStatus) -> StatusRule {
        statuses[status] ?? StatusRule(relevance: 0)
    }

    /// The contract's §5 table, with §8's budget and cadence and §9's renewal and fallback alerts.
    public static let contractDefault = ProjectionRules(statuses: [
        .scheduled: StatusRule(
            relevance: 80, alert: AlertContent(title: "Visit booked", body: "Follow your technician live."),
            staleAfterSeconds: 120, staleNotBeforeArrivalStart: true,
            fallbackAlert: FallbackAlert(title: "Visit booked", body: "Your service visit is booked.")),
        .enRoute: StatusRule(relevance: 80, staleAfterSeconds: 120),
        .nearby: StatusRule(
            relevance: 100,
            alert: AlertContent(
                title: "Service visit", body: "Your technician is a few minutes away.", sound: "default"),
            staleAfterSeconds: 120,
            fallbackAlert: FallbackAlert(title: "Service visit", body: "Your technician is a few minutes away.")),
        .onSite: StatusRule(
            relevance: 80,
            alert: AlertContent(title: "Service visit", body: "Your technician has arrived.", sound: "default"),
            staleAfterSeconds: 7200,
            fallbackAlert: FallbackAlert(title: "Service visit", body: "Your technician has arrived.")),
        .finishing: StatusRule(relevance: 80, staleAfterSeconds: 3600),
        .completed: StatusRule(
            relevance: 0, dismissal: .after(seconds: 3600),
            fallbackAlert: FallbackAlert(title: "Visit complete", body: "Your service visit is complete.")),
        .cancelled: StatusRule(
            relevance: 0, dismissal: .immediate,
            fallbackAlert: FallbackAlert(title: "Visit cancelled", body: "Your service visit was cancelled.")),
        .failed: StatusRule(
            relevance: 0, dismissal: .immediate,
            fallbackAlert: FallbackAlert(title: "Visit not completed", body: "Your service visit could not be completed.")),
    ])
}
