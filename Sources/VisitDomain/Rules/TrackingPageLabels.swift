/// The words of the tracking page (`GET /track/<token>`), from the rules' `"trackingPage"` block and, per
/// language, its `locales` blocks: the page draws the visit's card with these, in the visit's language.
///
/// `away` holds `{km}` and `endedUntil` holds `{time}`, which the page fills in; each status has its label.
public struct TrackingPageLabels: Sendable, Hashable {
    /// The labels by key, `statuses.<status>` for a status's.
    public private(set) var texts: [String: String]

    /// Every key the page uses, in the order the JSON gives them.
    public static let keys: [String] =
        ["title", "arrival", "away", "stale", "ended", "endedUntil", "gone", "offline"]
        + VisitStatus.allCases.map { "statuses.\($0.rawValue)" }

    /// The placeholder a label must keep, by key.
    public static let placeholders: [String: String] = ["away": "{km}", "endedUntil": "{time}"]

    /// The English labels, what the rules give when they have no `"trackingPage"`.
    public static let english = TrackingPageLabels(texts: [
        "title": "Your visit",
        "arrival": "Arrival window",
        "away": "{km} km away",
        "stale": "May be out of date: waiting for fresh news",
        "ended": "This visit has ended.",
        "endedUntil": "This visit has ended. This card stays until {time}.",
        "gone": "This tracking link has expired or is not valid.",
        "offline": "Cannot reach the server: this may be out of date.",
        "statuses.scheduled": "Scheduled",
        "statuses.enRoute": "On the way",
        "statuses.nearby": "Nearby",
        "statuses.onSite": "On site",
        "statuses.finishing": "Finishing",
        "statuses.completed": "Completed",
        "statuses.cancelled": "Cancelled",
        "statuses.failed": "Could not be completed",
    ])

    init(texts: [String: String]) { self.texts = texts }

    /// The label of `key` (every key of `keys` has one).
    public subscript(key: String) -> String { texts[key] ?? "" }

    /// `{"title": …, …, "statuses": {"scheduled": …, …}}`, as the page reads them.
    public var json: JSONValue {
        var members: [JSONMember] = []
        var statuses: [JSONMember] = []
        for key in Self.keys {
            if key.hasPrefix("statuses.") {
                statuses.append(JSONMember(String(key.dropFirst("statuses.".count)), .string(self[key])))
            } else {
                members.append(JSONMember(key, .string(self[key])))
            }
        }
        members.append(JSONMember("statuses", .object(statuses)))
        return .object(members)
    }

    /// These labels with the ones a `"trackingPage"` object gives in their place. Keys outside `keys` are
    /// refused naming their path; a label that drops its placeholder is refused.
    func overlaid(by object: JSONObjectReader) throws(FieldProblem) -> TrackingPageLabels {
        var result = self
        try object.rejectUnknown(allowed: Set(Self.keys.filter { !$0.hasPrefix("statuses.") } + ["statuses"]))
        for key in Self.keys where !key.hasPrefix("statuses.") {
            guard let text = try object.optionalText(key, maxBytes: 512) else { continue }
            try Self.check(text, key: key, in: object)
            result.texts[key] = text
        }
        if let statuses = try object.optionalObject("statuses") {
            try statuses.rejectUnknown(allowed: Set(VisitStatus.allCases.map(\.rawValue)))
            for status in VisitStatus.allCases {
                guard let text = try statuses.optionalText(status.rawValue, maxBytes: 512) else { continue }
                try Self.check(text, key: status.rawValue, in: statuses)
                result.texts["statuses.\(status.rawValue)"] = text
            }
        }
        return result
    }

    private static func check(_ text: String, key: String, in object: JSONObjectReader) throws(FieldProblem) {
        guard !text.isEmpty else { throw object.invalid(key, "must not be empty") }
        if let placeholder = placeholders[key], !text.contains(placeholder) {
            throw object.invalid(key, "must contain \(placeholder), which the page fills in")
        }
    }
}
