import JSON

extension EventMetadata {
    /// The metadata as a JSON object with sorted keys and absent fields left out, written with the one
    /// JSON writer's escaper straight into bytes (appends encode one per event on the hot path).
    var jsonText: String {
        var out: [UInt8] = []
        out.reserveCapacity(96)
        out.append(UInt8(ascii: "{"))
        func field(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(contentsOf: "\":".utf8)
            JSONValue.writeString(value, to: &out)
        }
        field("actorName", actorName)
        field("actorRole", actorRole)
        field("actorSubject", actorSubject)
        field("causationId", causationId)
        field("correlationId", correlationId)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Reads stored metadata (`metadata::text` of the jsonb column); fields that are absent, `null` or
    /// not strings are left out, and text that is not a JSON object gives empty metadata.
    init(jsonText: String) {
        let object = (try? JSONValue.parse(jsonText)) ?? .null
        self.init(
            actorRole: object["actorRole"]?.stringValue, actorSubject: object["actorSubject"]?.stringValue,
            actorName: object["actorName"]?.stringValue, correlationId: object["correlationId"]?.stringValue,
            causationId: object["causationId"]?.stringValue)
    }
}
