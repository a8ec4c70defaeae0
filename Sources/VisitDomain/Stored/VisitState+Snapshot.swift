extension VisitState {
    /// The schema version of `snapshotJSON()`.
    public static let snapshotSchemaVersion = 1

    /// The whole state as JSON, for a read model that keeps the folded state next to the view
    /// (so the append path can `decide` without re-reading the stream). A snapshot is a cache:
    /// a replay rebuilds it from the events.
    public func snapshotJSON() -> JSONValue {
        var members: [JSONMember] = [
            JSONMember("schemaVersion", .number(Double(Self.snapshotSchemaVersion))),
            JSONMember("attributes", attributes.apsJSON),
            JSONMember("customerId", .string(customerId)),
            JSONMember("technician", technician.json),
            JSONMember("status", .string(status.rawValue)),
            JSONMember("arrivalWindow", arrivalWindow.json),
            JSONMember("kilometresAway", .number(kilometresAway)),
            JSONMember("version", .number(Double(version))),
            JSONMember("lastEventType", .string(lastEventType.rawValue)),
            JSONMember("scheduledAt", .number(Double(scheduledAt))),
            JSONMember("lastRecordedAt", .number(Double(lastRecordedAt))),
            JSONMember("apsTimestamp", .number(Double(apsTimestamp))),
            JSONMember("statusChangedAt", .number(Double(statusChangedAt))),
            JSONMember("statusChangedVersion", .number(Double(statusChangedVersion))),
        ]
        if let reason { members.append(JSONMember("reason", .string(reason))) }
        if let location { members.append(JSONMember("location", .string(location))) }
        if let locale { members.append(JSONMember("locale", .string(locale.text))) }
        return .object(members)
    }

    /// Reads a snapshot written by `snapshotJSON()`.
    public init(snapshot: some Collection<UInt8>) throws(StoredEventError) {
        do {
            let json = try JSONValue.parse(snapshot)
            let object = try JSONObjectReader(json, path: "")
            guard try object.integer("schemaVersion") == Self.snapshotSchemaVersion else {
                throw FieldProblem(kind: .invalidValue, path: "schemaVersion", reason: "unknown snapshot version")
            }
            let attributes = try object.object("attributes")
            let statusName = try object.string("status")
            let typeName = try object.string("lastEventType")
            guard let status = VisitStatus(rawValue: statusName) else {
                throw object.invalid("status", "unknown status")
            }
            guard let lastEventType = VisitEventType(rawValue: typeName) else {
                throw object.invalid("lastEventType", "unknown event type")
            }
            self.init(
                attributes: ServiceVisitAttributes(
                    visitId: try attributes.string("visitId"),
                    customerFirstName: try attributes.string("customerFirstName"),
                    serviceAddress: try attributes.string("serviceAddress"),
                    jobSummary: try attributes.string("jobSummary")),
                customerId: try object.string("customerId"), technician: try object.storedTechnician("technician"),
                status: status, arrivalWindow: try object.storedWindow(required: "arrivalWindow"),
                kilometresAway: try object.double("kilometresAway"), reason: try object.optionalString("reason"),
                version: try object.integer("version"), lastEventType: lastEventType,
                scheduledAt: try object.integer("scheduledAt"), lastRecordedAt: try object.integer("lastRecordedAt"),
                apsTimestamp: try object.integer("apsTimestamp"),
                statusChangedAt: try object.integer("statusChangedAt"),
                statusChangedVersion: try object.integer("statusChangedVersion"),
                location: try object.optionalString("location"),
                locale: try object.storedLanguageTag("locale"))
        } catch let error as FieldProblem {
            throw StoredEventError(code: .corruptData, eventType: "snapshot", message: error.message)
        } catch let error as JSONParseError {
            throw StoredEventError(code: .corruptData, eventType: "snapshot", message: "not JSON: \(error)")
        } catch {
            throw StoredEventError(code: .corruptData, eventType: "snapshot", message: "unreadable snapshot")
        }
    }
}
