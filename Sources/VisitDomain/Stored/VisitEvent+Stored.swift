extension VisitEvent {
    /// The schema version this code writes for each event type. Older stored versions are
    /// upcast on read (`VisitEvent+Upcasting.swift`); newer ones are refused.
    public static func currentSchemaVersion(of type: VisitEventType) -> Int {
        switch type {
        case .scheduled: 2
        default: 1
        }
    }

    /// The JSON stored in the event log for this event (`data`), with its `schemaVersion`.
    /// The `eventType` column holds `eventType`.
    public func storedJSON() -> JSONValue {
        var members = [JSONMember("schemaVersion", .number(Double(VisitEvent.currentSchemaVersion(of: type))))]
        switch self {
        case .scheduled(let scheduled):
            members += [
                JSONMember("visitId", .string(scheduled.visitId)),
                JSONMember("customerId", .string(scheduled.customerId)),
                JSONMember("attributes", scheduled.attributes.visitViewJSON),
                JSONMember("technician", scheduled.technician.json),
                JSONMember("arrivalWindow", scheduled.arrivalWindow.json),
                JSONMember("kilometresAway", .number(scheduled.kilometresAway)),
            ]
            if let location = scheduled.location { members.append(JSONMember("location", .string(location))) }
            if let locale = scheduled.locale { members.append(JSONMember("locale", .string(locale.text))) }
        case .enRoute(let update), .nearby(let update), .finishing(let update):
            members += update.jsonMembers
        case .progress(let update, let reason):
            members += update.jsonMembers
            if let reason { members.append(JSONMember("reason", .string(reason))) }
        case .onSite, .completed:
            break
        case .cancelled(let reason):
            if let reason { members.append(JSONMember("reason", .string(reason))) }
        case .failed(let reason):
            members.append(JSONMember("reason", .string(reason)))
        case .reassigned(let technician, let update):
            members.append(JSONMember("technician", technician.json))
            members += update.jsonMembers
        }
        return .object(members)
    }

    /// The stored JSON's bytes.
    public func storedData() -> [UInt8] { storedJSON().serialized() }

    /// Reads a stored event back, upcasting older schema versions.
    /// - Parameters:
    ///   - eventType: the stored `eventType` (the contract's name).
    ///   - data: the stored JSON.
    public static func decodeStored(eventType: String, data: some Collection<UInt8>) throws(StoredEventError)
        -> VisitEvent
    {
        let json: JSONValue
        do {
            json = try JSONValue.parse(data)
        } catch {
            throw StoredEventError(code: .corruptData, eventType: eventType, message: "not JSON: \(error)")
        }
        return try decodeStored(eventType: eventType, json: json)
    }

    /// Reads a stored event from borrowed bytes (no copy; the replay path).
    public static func decodeStored(eventType: String, buffer: UnsafeBufferPointer<UInt8>) throws(StoredEventError)
        -> VisitEvent
    {
        let json: JSONValue
        do {
            json = try JSONValue.parse(buffer: buffer)
        } catch {
            throw StoredEventError(code: .corruptData, eventType: eventType, message: "not JSON: \(error)")
        }
        return try decodeStored(eventType: eventType, json: json)
    }

    /// Reads a stored event from its parsed JSON, upcasting older schema versions.
    public static func decodeStored(eventType: String, json: JSONValue) throws(StoredEventError) -> VisitEvent {
        guard let type = VisitEventType(rawValue: eventType) else {
            throw StoredEventError(code: .unknownEventType, eventType: eventType, message: "unknown event type")
        }
        guard case .number(let versionNumber)? = json["schemaVersion"], versionNumber >= 1,
            versionNumber == versionNumber.rounded(), versionNumber <= 1_000
        else {
            throw StoredEventError(
                code: .unsupportedSchemaVersion, eventType: eventType, message: "missing or invalid schemaVersion")
        }
        let version = Int(versionNumber)
        let current = currentSchemaVersion(of: type)
        guard version <= current else {
            throw StoredEventError(
                code: .unsupportedSchemaVersion, eventType: eventType,
                message: "schemaVersion \(version) is newer than this code (\(current))")
        }
        do {
            let upcast = try upcast(json, type: type, from: version)
            return try decodeCurrent(type: type, object: JSONObjectReader(upcast, path: ""))
        } catch {
            throw StoredEventError(code: .corruptData, eventType: eventType, message: error.message)
        }
    }

    static func decodeCurrent(type: VisitEventType, object: JSONObjectReader) throws(FieldProblem) -> VisitEvent {
        switch type {
        case .scheduled:
            let attributes = try object.object("attributes")
            let visitId = try object.string("visitId")
            return .scheduled(
                VisitScheduled(
                    customerId: try object.string("customerId"),
                    attributes: ServiceVisitAttributes(
                        visitId: visitId,
                        customerFirstName: try attributes.string("customerFirstName"),
                        serviceAddress: try attributes.string("serviceAddress"),
                        jobSummary: try attributes.string("jobSummary")),
                    technician: try object.storedTechnician("technician"),
                    arrivalWindow: try object.storedWindow(required: "arrivalWindow"),
                    kilometresAway: try object.double("kilometresAway"),
                    location: try object.optionalString("location"),
                    locale: try object.storedLanguageTag("locale")))
        case .enRoute: return .enRoute(try object.storedUpdate())
        case .nearby: return .nearby(try object.storedUpdate())
        case .onSite: return .onSite
        case .finishing: return .finishing(try object.storedUpdate())
        case .completed: return .completed
        case .cancelled: return .cancelled(reason: try object.optionalString("reason"))
        case .failed: return .failed(reason: try object.string("reason"))
        case .progress: return .progress(try object.storedUpdate(), reason: try object.optionalString("reason"))
        case .reassigned: return .reassigned(try object.storedTechnician("technician"), try object.storedUpdate())
        }
    }
}

extension JSONObjectReader {
    func storedTechnician(_ key: String) throws(FieldProblem) -> Technician {
        let object = try self.object(key)
        return Technician(
            id: try object.string("id"), name: try object.string("name"),
            avatarSymbol: try object.string("avatarSymbol"), vanDescription: try object.string("vanDescription"))
    }

    func storedWindow(_ key: String) throws(FieldProblem) -> ArrivalWindow? {
        guard value(key) != nil else { return nil }
        return try storedWindow(required: key)
    }

    func storedWindow(required key: String) throws(FieldProblem) -> ArrivalWindow {
        let object = try self.object(key)
        return ArrivalWindow(start: try object.integer("start"), end: try object.integer("end"))
    }

    func storedUpdate() throws(FieldProblem) -> ArrivalUpdate {
        ArrivalUpdate(
            kilometresAway: try optionalDouble("kilometresAway"), arrivalWindow: try storedWindow("arrivalWindow"))
    }
}

extension Technician {
    /// `{"id","name","avatarSymbol","vanDescription"}`, the request's and the store's shape.
    public var json: JSONValue {
        .object([
            JSONMember("id", .string(id)),
            JSONMember("name", .string(name)),
            JSONMember("avatarSymbol", .string(avatarSymbol)),
            JSONMember("vanDescription", .string(vanDescription)),
        ])
    }
}

extension ArrivalWindow {
    /// `{"start","end"}`.
    public var json: JSONValue {
        .object([JSONMember("start", .number(Double(start))), JSONMember("end", .number(Double(end)))])
    }
}

extension ArrivalUpdate {
    var jsonMembers: [JSONMember] {
        var members: [JSONMember] = []
        if let kilometresAway { members.append(JSONMember("kilometresAway", .number(kilometresAway))) }
        if let arrivalWindow { members.append(JSONMember("arrivalWindow", arrivalWindow.json)) }
        return members
    }
}
