/// The body of `POST /v1/visits` (contract §4), parsed into the `scheduled` event it books.
public enum ScheduleVisitRequest {
    /// Parses and validates a schedule body.
    ///
    /// - Parameters:
    ///   - body: the raw request body.
    ///   - generateVisitId: called only when the body has no `visitId`.
    /// - Returns: the `scheduled` event's payload (`VisitEvent.scheduled(result)` to decide it).
    /// - Throws: `VisitInputError` naming the field; `.malformedJSON` when the body is not JSON.
    public static func parse(
        _ body: some Collection<UInt8>, generateVisitId: () -> String
    ) throws(VisitInputError) -> VisitScheduled {
        let object = try VisitInputError.parseBody(body)
        do throws(FieldProblem) {
            try object.rejectUnknown(allowed: [
                "visitId", "customerId", "attributes", "technician", "arrivalWindow", "kilometresAway",
            ])
            let visitId = try object.optionalString("visitId", maxBytes: VisitInputLimits.idBytes) ?? generateVisitId()
            if visitId.unicodeScalars.contains(where: { !isURLUnreserved($0) }) {
                throw object.invalid("visitId", "may only contain letters, digits, '-', '.', '_' and '~'")
            }
            let customerId = try object.string("customerId", maxBytes: VisitInputLimits.idBytes)
            let attributes = try object.object("attributes")
            try attributes.rejectUnknown(allowed: ["customerFirstName", "serviceAddress", "jobSummary"])
            let serviceAttributes = ServiceVisitAttributes(
                visitId: visitId,
                customerFirstName: try attributes.text("customerFirstName", maxBytes: VisitInputLimits.nameBytes),
                serviceAddress: try attributes.text("serviceAddress", maxBytes: VisitInputLimits.textBytes),
                jobSummary: try attributes.text("jobSummary", maxBytes: VisitInputLimits.textBytes))
            let technician = try object.technician("technician")
            guard let window = try object.optionalArrivalWindow("arrivalWindow") else {
                throw FieldProblem(kind: .missing, path: "arrivalWindow", reason: "required field is missing")
            }
            let kilometres = try object.optionalKilometres("kilometresAway") ?? 0
            return VisitScheduled(
                customerId: customerId, attributes: serviceAttributes, technician: technician,
                arrivalWindow: window, kilometresAway: kilometres)
        } catch {
            throw VisitInputError(error)
        }
    }

    static func isURLUnreserved(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "-", ".", "_", "~": true
        default: false
        }
    }
}
