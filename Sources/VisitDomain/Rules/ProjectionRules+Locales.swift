/// The rules' texts in other languages (`"locales": {"<tag>": {…}}`): each block gives, for one BCP 47 tag,
/// any of the texts the default rules have — `statuses.<status>.alert` and `.fallbackAlert` (`title`,
/// `body`), `renewalAlert` (`title`, `body`) and `trackingPage` (the tracking page's labels). A visit's
/// texts are those of its locale: the tag, then the tag without its last subtag (`zh-Hant-TW`, `zh-Hant`,
/// `zh`), then the default; case is ignored.
extension ProjectionRules {
    /// The rules a visit in `locale` is pushed with: these rules with that locale's texts in place of the
    /// default ones (the most specific block that exists, which already holds its parents' texts); these
    /// rules themselves for nil or a language no block gives.
    public func localized(for locale: LanguageTag?) -> ProjectionRules {
        guard let locale, !locales.isEmpty else { return self }
        for key in locale.fallbackKeys {
            if let rules = locales[key] { return rules }
        }
        return self
    }

    /// These rules without their other languages: every visit pushed with the default texts.
    public var withoutLocales: ProjectionRules {
        var rules = self
        rules.locales = [:]
        return rules
    }

    /// The tags the rules give texts for, lower case, sorted.
    public var localeKeys: [String] { locales.keys.sorted() }

    /// Parses `"locales"` against the default texts of `rules`: every block's rules, its parents' texts
    /// (shorter tags) overlaid first. A key the default texts lack is refused naming its path.
    static func parseLocales(_ object: JSONObjectReader, defaults rules: ProjectionRules) throws(FieldProblem)
        -> [String: ProjectionRules]
    {
        var blocks: [String: JSONObjectReader] = [:]
        var names: [String: String] = [:]
        for member in object.members {
            guard let tag = LanguageTag(member.key) else {
                throw object.invalid(
                    FieldProblem.displayKey(member.key), "not a well-formed BCP 47 language tag (RFC 5646)")
            }
            guard blocks[tag.key] == nil else {
                throw object.invalid(member.key, "another block names the same language (case is ignored)")
            }
            guard let block = try object.optionalObject(member.key) else { continue }
            blocks[tag.key] = block
            names[tag.key] = member.key
        }
        var result: [String: ProjectionRules] = [:]
        for (key, _) in blocks {
            guard let tag = LanguageTag(key) else { continue }
            var localized = rules
            // Parents first, so a more specific block's texts win over a broader one's.
            for parent in tag.fallbackKeys.reversed() {
                guard let block = blocks[parent] else { continue }
                localized = try localized.overlaid(by: block)
            }
            try checkFallbackBudget(localized, path: "\(object.fieldPath(names[key] ?? key)).")
            result[key] = localized
        }
        return result
    }

    /// These rules with the texts of one locale block in place of theirs.
    func overlaid(by block: JSONObjectReader) throws(FieldProblem) -> ProjectionRules {
        var rules = self
        try block.rejectUnknownText(allowed: ["statuses", "renewalAlert", "trackingPage"])
        if let statuses = try block.optionalObject("statuses") {
            try statuses.rejectUnknownText(allowed: Set(VisitStatus.allCases.map(\.rawValue)))
            for status in VisitStatus.allCases {
                guard let texts = try statuses.optionalObject(status.rawValue) else { continue }
                var rule = rules.rule(for: status)
                try texts.rejectUnknownText(
                    allowed: Set((rule.alert == nil ? [] : ["alert"]) + (rule.fallbackAlert == nil ? [] : ["fallbackAlert"])))
                if var alert = rule.alert, let object = try texts.optionalObject("alert") {
                    try object.overlayTitleAndBody(&alert.title, &alert.body, titleBytes: 512, bodyBytes: 1024)
                    rule.alert = alert
                }
                if var fallback = rule.fallbackAlert, let object = try texts.optionalObject("fallbackAlert") {
                    try object.overlayTitleAndBody(&fallback.title, &fallback.body, titleBytes: 4096, bodyBytes: 4096)
                    rule.fallbackAlert = fallback
                }
                rules.statuses[status] = rule
            }
        }
        if let object = try block.optionalObject("renewalAlert") {
            try object.overlayTitleAndBody(
                &rules.renewalAlert.title, &rules.renewalAlert.body, titleBytes: 512, bodyBytes: 1024)
        }
        if let labels = try block.optionalObject("trackingPage") {
            rules.trackingLabels = try rules.trackingLabels.overlaid(by: labels)
        }
        return rules
    }
}

extension JSONObjectReader {
    /// An alert's `title` and `body` from a locale block in place of the default ones it leaves out, each at
    /// most its bytes; any other key refused naming its path.
    fileprivate func overlayTitleAndBody(_ title: inout String, _ body: inout String, titleBytes: Int, bodyBytes: Int)
        throws(FieldProblem)
    {
        try rejectUnknownText(allowed: ["title", "body"])
        title = try optionalText("title", maxBytes: titleBytes) ?? title
        body = try optionalText("body", maxBytes: bodyBytes) ?? body
    }

    /// Refuses the first member of a locale block that the default texts do not have, naming its path.
    fileprivate func rejectUnknownText(allowed: Set<String>) throws(FieldProblem) {
        for member in members where !allowed.contains(member.key) {
            throw FieldProblem(
                kind: .unknownField, path: fieldPath(FieldProblem.displayKey(member.key)),
                reason: "the default texts have no such key (a locale block gives only texts the defaults have)")
        }
    }
}
