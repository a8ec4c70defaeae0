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

    /// Rules from their parts.
    public init(
        statuses: [VisitStatus: StatusRule], alertPriority: Int = 10, quietPriority: Int = 5, startPriority: Int = 10,
        endPriority: Int = 10, startEndExpirationSeconds: Int = 14_400, startIncludesStaleDate: Bool = true,
        startIncludesRelevanceScore: Bool = true, maximumPushBytes: Int = 4096
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
    }

    /// The rule of `status` (validation guarantees every status has one).
    public func rule(for status: VisitStatus) -> StatusRule {
        statuses[status] ?? StatusRule(relevance: 0)
    }

    /// The contract's §5 table.
    public static let contractDefault = ProjectionRules(statuses: [
        .scheduled: StatusRule(
            relevance: 80, alert: AlertContent(title: "Visit booked", body: "Follow your technician live."),
            staleAfterSeconds: 120, staleNotBeforeArrivalStart: true),
        .enRoute: StatusRule(relevance: 80, staleAfterSeconds: 120),
        .nearby: StatusRule(
            relevance: 100,
            alert: AlertContent(
                title: "Service visit", body: "Your technician is a few minutes away.", sound: "default"),
            staleAfterSeconds: 120),
        .onSite: StatusRule(
            relevance: 80,
            alert: AlertContent(title: "Service visit", body: "Your technician has arrived.", sound: "default"),
            staleAfterSeconds: 7200),
        .finishing: StatusRule(relevance: 80, staleAfterSeconds: 3600),
        .completed: StatusRule(relevance: 0, dismissal: .after(seconds: 3600)),
        .cancelled: StatusRule(relevance: 0, dismissal: .immediate),
        .failed: StatusRule(relevance: 0, dismissal: .immediate),
    ])
}
