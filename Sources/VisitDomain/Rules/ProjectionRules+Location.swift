extension ProjectionRules {
    /// The rules' `location` block: `{"nearbyRadiusKm", "minChangeKm", "maxAccuracyMetres"}`, each optional
    /// (the defaults stand in for a missing one), each refused naming its key path (`location.minChangeKm`).
    static func parseLocation(_ object: JSONObjectReader) throws(FieldProblem) -> LocationRules {
        try object.rejectUnknown(allowed: ["nearbyRadiusKm", "minChangeKm", "maxAccuracyMetres"])
        var rules = LocationRules()
        if let radius = try object.optionalDouble("nearbyRadiusKm") {
            guard (0...100).contains(radius) else {
                throw object.invalid("nearbyRadiusKm", "expected kilometres between 0 and 100")
            }
            rules.nearbyRadiusKm = radius
        }
        if let change = try object.optionalDouble("minChangeKm") {
            // Distances are shown to one decimal: a smaller change could never be told apart.
            guard (0.1...100).contains(change) else {
                throw object.invalid("minChangeKm", "expected kilometres between 0.1 (the shown precision) and 100")
            }
            rules.minChangeKm = change
        }
        if let metres = try object.optionalDouble("maxAccuracyMetres") {
            guard metres > 0, metres <= 100_000 else {
                throw object.invalid("maxAccuracyMetres", "expected metres above 0 and at most 100000")
            }
            rules.maxAccuracyMetres = metres
        }
        return rules
    }
}
