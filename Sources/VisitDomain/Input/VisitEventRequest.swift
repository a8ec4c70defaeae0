/// The body of `POST /v1/visits/{id}/events` (contract §4), parsed into a `VisitEvent`.
///
/// Accepted shapes: `{"type": T}` plus, for `enRoute`/`nearby`/`onSite`/`finishing`/`completed`
/// and `progress`, optional `kilometresAway` and `arrivalWindow` (`progress` needs at least one;
/// `onSite` and `completed` validate them but the contract's rules win: arriving sets distance 0
/// and collapses the window); `reason` with `cancelled` (optional) and `failed` (required);
/// `technician` (required) and the optional distance/window with `reassigned`.
public enum VisitEventRequest {
    /// Parses and validates an event body.
    /// - Throws: `VisitInputError` naming the field; `.malformedJSON` when the body is not JSON,
    ///   `.unknownEventType` for a `type` that cannot be posted (including `scheduled`).
    public static func parse(_ body: some Collection<UInt8>) throws(VisitInputError) -> VisitEvent {
        let object = try VisitInputError.parseBody(body)
        let typeName: String
        do {
            typeName = try object.string("type")
        } catch {
            throw VisitInputError(error)
        }
        guard let type = VisitEventType(rawValue: typeName), type != .scheduled else {
            let known = VisitEventType.allCases.filter { $0 != .scheduled }.map(\.rawValue).joined(separator: ", ")
            throw VisitInputError(
                code: .unknownEventType, field: "type",
                message:
                    "type: unknown event type (expected one of \(known); visits are scheduled with POST /v1/visits)")
        }
        let movement: Set<String> = ["type", "kilometresAway", "arrivalWindow"]
        switch type {
        case .scheduled:
            throw VisitInputError(
                code: .invalidValue, field: "type", message: "type: visits are scheduled with POST /v1/visits")
        case .enRoute, .nearby, .onSite, .finishing, .completed, .progress:
            return try VisitInputError.reading { () throws(FieldProblem) in
                try object.rejectUnknown(allowed: movement)
                let update = try object.arrivalUpdate()
                switch type {
                case .enRoute: return .enRoute(update)
                case .nearby: return .nearby(update)
                case .onSite: return .onSite
                case .finishing: return .finishing(update)
                case .completed: return .completed
                default:
                    guard !update.isEmpty else {
                        throw FieldProblem(
                            kind: .missing, path: "kilometresAway",
                            reason: "progress needs kilometresAway or arrivalWindow")
                    }
                    return .progress(update)
                }
            }
        case .cancelled:
            return try VisitInputError.reading { () throws(FieldProblem) in
                try object.rejectUnknown(allowed: ["type", "reason"])
                return .cancelled(
                    reason: try object.optionalText("reason", maxBytes: VisitInputLimits.textBytes, allowsLineBreaks: true))
            }
        case .failed:
            return try VisitInputError.reading { () throws(FieldProblem) in
                try object.rejectUnknown(allowed: ["type", "reason"])
                return .failed(reason: try object.text("reason", maxBytes: VisitInputLimits.textBytes, allowsLineBreaks: true))
            }
        case .reassigned:
            try VisitInputError.reading { () throws(FieldProblem) in
                try object.rejectUnknown(allowed: movement.union(["technician"]))
            }
            let technician = try object.technician("technician")
            return .reassigned(technician, try VisitInputError.reading { () throws(FieldProblem) in try object.arrivalUpdate() })
        }
    }
}
