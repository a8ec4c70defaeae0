/// A visit under way as the location rules see it: its status (`enRoute` or `nearby`), where it is, and the
/// distance it shows now.
public struct VisitUnderWay: Sendable, Hashable {
    public var visitId: String
    public var status: VisitStatus
    public var location: ServiceLocation
    /// The visit's current `kilometresAway`.
    public var kilometresAway: Double

    public init(visitId: String, status: VisitStatus, location: ServiceLocation, kilometresAway: Double) {
        self.visitId = visitId
        self.status = status
        self.location = location
        self.kilometresAway = kilometresAway
    }
}

extension LocationRules {
    /// Whether a fix may change anything: its accuracy within `maxAccuracyMetres`.
    public func trusts(_ fix: TechnicianFix) -> Bool { fix.accuracyMetres <= maxAccuracyMetres }

    /// What one fix causes on one visit under way: `nearby` when an `enRoute` visit's shown distance is within
    /// `nearbyRadiusKm`, else `progress` when the shown distance differs from the visit's by at least
    /// `minChangeKm` (in tenths); nil for anything else (a visit not under way, too small a change). Each event
    /// carries the shown distance. The fix's accuracy and age are the caller's to check.
    public func event(for fix: TechnicianFix, on visit: VisitUnderWay) -> VisitEvent? {
        guard visit.status == .enRoute || visit.status == .nearby else { return nil }
        let shown = LocationRules.tenths(fix.location.kilometres(to: visit.location))
        let update = ArrivalUpdate(kilometresAway: LocationRules.kilometres(tenths: shown))
        if visit.status == .enRoute && shown <= nearbyTenths { return .nearby(update) }
        let current = LocationRules.tenths(visit.kilometresAway)
        guard abs(shown - current) >= minChangeTenths else { return nil }
        return .progress(update)
    }
}
