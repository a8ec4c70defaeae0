import Runtime

extension EventMetadata {
    /// The metadata as a JSON object with sorted keys and absent fields left out (what `JSONEncoder` with
    /// `.sortedKeys` writes), built by hand because appends encode one per event on the hot path.
    var jsonText: String {
        var out = "{"
        func field(_ name: String, _ value: String?) {
            guard let value else { return }
            if out.utf8.count > 1 { out += "," }
            out += "\"" + name + "\":"
            JSONString.appendQuoted(value, to: &out)
        }
        field("actorRole", actorRole)
        field("actorSubject", actorSubject)
        field("causationId", causationId)
        field("correlationId", correlationId)
        return out + "}"
    }
}
