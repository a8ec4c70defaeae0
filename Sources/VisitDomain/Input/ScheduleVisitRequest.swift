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
        try VisitInputError.reading { () throws(FieldProblem) in
            try object.rejectUnknown(allowed: [
                "visitId", "customerId", "attributes", "technician", "arrivalWindow", "kilometresAway", "location",
                "locale",
            ])
        }
        let visitId = try object.optionalId("visitId") ?? generateVisitId()
        let customerId = try object.id("customerId")
        let serviceAttributes = try VisitInputError.reading { () throws(FieldProblem) in
            let attributes = try object.object("attributes")
            try attributes.rejectUnknown(allowed: ["customerFirstName", "serviceAddress", "jobSummary"])
            return ServiceVisitAttributes(
                visitId: visitId,
                customerFirstName: try attributes.text("customerFirstName", maxBytes: VisitInputLimits.nameBytes),
                serviceAddress: try attributes.text("serviceAddress", maxBytes: VisitInputLimits.textBytes),
                jobSummary: try attributes.text("jobSummary", maxBytes: VisitInputLimits.textBytes))
        }
        let technician = try object.technician("technician")
        let locale = try object.optionalLanguageTag("locale")
        return try VisitInputError.reading { () throws(FieldProblem) in
            guard let window = try object.optionalArrivalWindow("arrivalWindow") else {
                throw FieldProblem(kind: .missing, path: "arrivalWindow", reason: "required field is missing")
            }
            let kilometres = try object.optionalKilometres("kilometresAway") ?? 0
            let location = try object.optionalLocation("location")
            return VisitScheduled(
                customerId: customerId, attributes: serviceAttributes, technician: technician,
                arrivalWindow: window, kilometresAway: kilometres, location: location?.text, locale: locale)
        }
    }
}
