/// Where a technician's device says it is, once (`POST /v1/technicians/{id}/location`): the point, how
/// accurate the device thinks it is, and when it was measured. Never stored: only the distances it causes
/// are, in the events it appends.
public struct TechnicianFix: Sendable, Hashable {
    /// Where the technician is.
    public var location: ServiceLocation
    /// The radius of the device's uncertainty, metres (`>= 0`).
    public var accuracyMetres: Double
    /// When the device measured it, seconds since 1970 (fractions allowed).
    public var recordedAt: Double

    public init(location: ServiceLocation, accuracyMetres: Double, recordedAt: Double) {
        self.location = location
        self.accuracyMetres = accuracyMetres
        self.recordedAt = recordedAt
    }

    /// Parses and validates a fix body: `{"latitude","longitude","accuracyMetres","recordedAt"}`, all
    /// required numbers.
    /// - Throws: `VisitInputError` naming the field (422), `.malformedJSON` when the body is not JSON (400).
    public static func parse(_ body: some Collection<UInt8>) throws(VisitInputError) -> TechnicianFix {
        let object = try VisitInputError.parseBody(body)
        return try VisitInputError.reading { () throws(FieldProblem) in
            try object.rejectUnknown(allowed: ["latitude", "longitude", "accuracyMetres", "recordedAt"])
            let latitude = try object.coordinate("latitude", limit: 90)
            let longitude = try object.coordinate("longitude", limit: 180)
            let accuracy = try object.double("accuracyMetres")
            guard accuracy >= 0 else { throw object.invalid("accuracyMetres", "must not be negative") }
            let recordedAt = try object.double("recordedAt")
            guard (0...Double(VisitInputLimits.maximumEpoch)).contains(recordedAt) else {
                throw object.invalid("recordedAt", "expected epoch seconds between 0 and \(VisitInputLimits.maximumEpoch)")
            }
            // In range by the checks above.
            let location = ServiceLocation(latitude: latitude, longitude: longitude)!
            return TechnicianFix(location: location, accuracyMetres: accuracy, recordedAt: recordedAt)
        }
    }
}
