extension VisitEvent {
    /// Brings stored JSON of an older schema version to the current one, one step at a time.
    ///
    /// The only older version so far is `scheduled` v1, the first draft of the log format,
    /// which stored the technician and the window flat (`technicianId`, `technicianName`,
    /// `avatarSymbol`, `vanDescription`, `arrivalStart`, `arrivalEnd`) and the attributes at the
    /// top level, without `kilometresAway` (read as 0). Adding a version means adding a step here.
    static func upcast(_ json: JSONValue, type: VisitEventType, from version: Int) throws(FieldProblem) -> JSONValue {
        var json = json
        var version = version
        while version < currentSchemaVersion(of: type) {
            switch (type, version) {
            case (.scheduled, 1): json = try scheduledV1toV2(json)
            default:
                throw FieldProblem(
                    kind: .invalidValue, path: "schemaVersion", reason: "no upcaster from version \(version)")
            }
            version += 1
        }
        return json
    }

    static func scheduledV1toV2(_ json: JSONValue) throws(FieldProblem) -> JSONValue {
        let v1 = try JSONObjectReader(json, path: "")
        func copy(_ key: String, as newKey: String? = nil) throws(FieldProblem) -> JSONMember {
            JSONMember(newKey ?? key, .string(try v1.string(key)))
        }
        return .object([
            JSONMember("schemaVersion", .number(2)),
            try copy("visitId"),
            try copy("customerId"),
            JSONMember(
                "attributes",
                .object([
                    try copy("customerFirstName"), try copy("serviceAddress"), try copy("jobSummary"),
                ])),
            JSONMember(
                "technician",
                .object([
                    try copy("technicianId", as: "id"), try copy("technicianName", as: "name"),
                    try copy("avatarSymbol"), try copy("vanDescription"),
                ])),
            JSONMember(
                "arrivalWindow",
                .object([
                    JSONMember("start", .number(Double(try v1.integer("arrivalStart")))),
                    JSONMember("end", .number(Double(try v1.integer("arrivalEnd")))),
                ])),
            JSONMember("kilometresAway", .number(try v1.optionalDouble("kilometresAway") ?? 0)),
        ])
    }
}
