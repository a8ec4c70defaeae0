extension EventMetadata {
    /// The metadata as a JSON object with sorted keys and absent fields left out (what `JSONEncoder` with
    /// `.sortedKeys` writes), built by hand because appends encode one per event on the hot path.
    var jsonText: String {
        var out = "{"
        func field(_ name: String, _ value: String?) {
            guard let value else { return }
            if out.utf8.count > 1 { out += "," }
            out += "\"" + name + "\":"
            EventMetadata.appendQuoted(value, to: &out)
        }
        field("actorRole", actorRole)
        field("actorSubject", actorSubject)
        field("causationId", causationId)
        field("correlationId", correlationId)
        return out + "}"
    }

    /// Appends `value` as a JSON string literal.
    static func appendQuoted(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
