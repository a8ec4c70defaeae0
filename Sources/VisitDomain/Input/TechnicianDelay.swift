/// A technician running late: the body of `POST /v1/technicians/{id}/delay`, and what it does to each of
/// that technician's visits — one `progress` that moves the arrival window (start and end) by `minutes`,
/// on the visits the technician has not reached yet (`scheduled`, `enRoute`, `nearby`).
public struct TechnicianDelay: Sendable, Hashable {
    /// The delays a dispatcher may post, in minutes (up to 12 hours).
    public static let allowedMinutes = 1...720

    /// The statuses of the visits a delay moves: those the technician has not reached yet.
    public static let delayedStatuses: Set<VisitStatus> = [.scheduled, .enRoute, .nearby]

    /// How late the technician runs, in minutes (`allowedMinutes`).
    public var minutes: Int
    /// Why, as the dispatcher tells it (free text, kept with each visit's `progress` and sealed there like a
    /// cancellation's reason).
    public var reason: String?

    public init(minutes: Int, reason: String? = nil) {
        self.minutes = minutes
        self.reason = reason
    }

    /// Parses and validates a body: `{"minutes": 1…720, "reason"?: text}`.
    /// - Throws: `VisitInputError` naming the field: `minutes` missing, not a whole number or outside
    ///   `allowedMinutes`; `reason` empty, too long or holding control characters; any other member.
    public static func parse(_ body: some Collection<UInt8>) throws(VisitInputError) -> TechnicianDelay {
        let object = try VisitInputError.parseBody(body)
        return try VisitInputError.reading { () throws(FieldProblem) in
            try object.rejectUnknown(allowed: ["minutes", "reason"])
            let minutes = try object.integer("minutes")
            guard allowedMinutes.contains(minutes) else {
                throw object.invalid(
                    "minutes",
                    "expected a whole number of minutes from \(allowedMinutes.lowerBound) to \(allowedMinutes.upperBound)")
            }
            let reason = try object.optionalText("reason", maxBytes: VisitInputLimits.textBytes, allowsLineBreaks: true)
            return TechnicianDelay(minutes: minutes, reason: reason)
        }
    }

    /// The `progress` this delay appends to a visit in `state`, or nil when the visit is not one it moves:
    /// another technician's, or one in a status not in `delayedStatuses`.
    public func event(for state: VisitState, technicianId: String) -> VisitEvent? {
        guard state.technician.id == technicianId, Self.delayedStatuses.contains(state.status) else { return nil }
        let seconds = minutes * 60
        let window = ArrivalWindow(start: state.arrivalWindow.start + seconds, end: state.arrivalWindow.end + seconds)
        return .progress(ArrivalUpdate(arrivalWindow: window), reason: reason)
    }
}
