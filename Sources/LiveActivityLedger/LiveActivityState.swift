/// Where a Live Activity of a visit stands, as the server knows it. Live states (`starting`, `active`,
/// `stale`) still get pushes; the others are retired for good: nothing more goes to them but, for
/// `renewed` and `replaced`, their own `end`.
public enum LiveActivityState: String, Sendable, Hashable, CaseIterable {
    /// A `start` went to a push-to-start device and no activity of the visit registered from it yet.
    case starting
    /// Registered and followed.
    case active
    /// The app reported it stale, or the visit's stale date passed without a newer state.
    case stale
    /// iOS ended it (the app said so, or APNs no longer knows its token), or the app forgot it.
    case ended
    /// The person swiped it away: no start of the visit goes to its device again.
    case dismissed
    /// Not renewed in time: iOS ended it at its lifetime.
    case lapsed
    /// Ended by the server at `activityRenewalSeconds`, a new start sent in its place.
    case renewed
    /// A newer activity of the visit registered from the same device.
    case replaced

    /// The state of a retired row, by the reason it was retired for.
    init(retiredReason: String?) {
        switch retiredReason {
        case TokenRegistry.RetirementReason.dismissed.rawValue: self = .dismissed
        case TokenRegistry.RetirementReason.lapsed.rawValue: self = .lapsed
        case TokenRegistry.RetirementReason.renewed.rawValue: self = .renewed
        case TokenRegistry.RetirementReason.replaced.rawValue: self = .replaced
        default: self = .ended
        }
    }
}

/// What the app may report from `Activity.activityStateUpdates`.
public enum ReportedActivityState: String, Sendable, Hashable, CaseIterable {
    case active, stale, ended, dismissed

    /// The retirement a report causes (`ended`, `dismissed`), nil for a live state.
    var retirement: TokenRegistry.RetirementReason? {
        switch self {
        case .active, .stale: nil
        case .ended: .ended
        case .dismissed: .dismissed
        }
    }
}

/// How a Live Activity came to be.
public enum LiveActivityOrigin: String, Sendable, Hashable, CaseIterable {
    /// The app started it (`Activity.request`).
    case app
    /// A `start` to a push-to-start token did.
    case pushToStart
    /// A renewal's `start` did.
    case renewal
}
