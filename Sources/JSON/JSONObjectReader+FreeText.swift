extension JSONObjectReader {
    /// A required free-text string (a name, a description, an address, a reason, an alert's text): checked
    /// like `string(_:maxBytes:)`, and refused when it holds a control character (Unicode Cc; with
    /// `allowsLineBreaks`, tab and newline may appear) or a bidirectional control (U+202A–U+202E,
    /// U+2066–U+2069). Such texts are shown to people — on a lock screen, in the console, in a log — where a
    /// control character rings a terminal's bell or moves its cursor, and a bidirectional one shows the
    /// text in another order than it was written.
    public func text(_ key: String, maxBytes: Int, allowsLineBreaks: Bool = false) throws(FieldProblem) -> String {
        let text = try string(key, maxBytes: maxBytes)
        if let refused = JSONObjectReader.refusedCharacter(in: text, allowsLineBreaks: allowsLineBreaks) {
            throw invalid(key, "must not contain \(refused)")
        }
        return text
    }

    /// An optional free-text string, checked like `text(_:maxBytes:allowsLineBreaks:)` when present.
    public func optionalText(_ key: String, maxBytes: Int, allowsLineBreaks: Bool = false) throws(FieldProblem)
        -> String?
    {
        guard value(key) != nil else { return nil }
        return try text(key, maxBytes: maxBytes, allowsLineBreaks: allowsLineBreaks)
    }

    /// What kind of character free text may not hold that `text` holds ("control characters",
    /// "bidirectional control characters"), or nil when it holds none.
    public static func refusedCharacter(in text: String, allowsLineBreaks: Bool = false) -> String? {
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x09, 0x0A:
                if !allowsLineBreaks { return "control characters" }
            case 0x00...0x1F, 0x7F...0x9F:
                return "control characters"
            case 0x202A...0x202E, 0x2066...0x2069:
                return "bidirectional control characters"
            default:
                continue
            }
        }
        return nil
    }
}
