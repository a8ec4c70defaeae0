/// Reading the rules' JSON is pure (bytes in, rules or a located error out); reading the file from the
/// projections directory is the adapters' (`ProjectionRules+Loading.swift` in `VisitProjections`).
extension ProjectionRules {
    /// Validates rules JSON. Every error names its key path (`statuses.nearby.relevance: expected a number`).
    public static func parse(_ data: some Collection<UInt8>) throws(ProjectionRulesError) -> ProjectionRules {
        let json: JSONValue
        do {
            json = try JSONValue.parse(data)
        } catch {
            throw ProjectionRulesError(code: .malformedJSON, keyPath: "", reason: "not valid JSON: \(error)")
        }
        do {
            return try parse(document: JSONObjectReader(json, path: ""))
        } catch {
            throw ProjectionRulesError(code: .invalid, keyPath: error.path, reason: error.reason)
        }
    }

    static func parse(document: JSONObjectReader) throws(FieldProblem) -> ProjectionRules {
        try document.rejectUnknown(allowed: [
            "comment", "schemaVersion", "statuses", "priorities", "startEndExpirationSeconds", "start",
            "maximumPushBytes", "budget", "progressIntervalSeconds", "activityRenewalSeconds", "channels",
            "renewalAlert", "maxRenewals", "activityLifetimeSeconds", "location", "trackingPage", "locales",
        ])
        let schemaVersion = try document.integer("schemaVersion")
        guard schemaVersion == 1 else { throw document.invalid("schemaVersion", "only version 1 is known") }

        let statusesObject = try document.object("statuses")
        try statusesObject.rejectUnknown(allowed: Set(VisitStatus.allCases.map(\.rawValue)))
        var statuses: [VisitStatus: StatusRule] = [:]
        for status in VisitStatus.allCases {
            statuses[status] = try parseRule(statusesObject.object(status.rawValue), status: status)
        }

        var rules = ProjectionRules(statuses: statuses)
        if let priorities = try document.optionalObject("priorities") {
            try priorities.rejectUnknown(allowed: ["alert", "quiet", "start", "end"])
            rules.alertPriority = try priorities.priority("alert") ?? rules.alertPriority
            rules.quietPriority = try priorities.priority("quiet") ?? rules.quietPriority
            rules.startPriority = try priorities.priority("start") ?? rules.startPriority
            rules.endPriority = try priorities.priority("end") ?? rules.endPriority
        }
        if let seconds = try document.optionalInteger("startEndExpirationSeconds") {
            guard seconds > 0 else { throw document.invalid("startEndExpirationSeconds", "must be positive") }
            rules.startEndExpirationSeconds = seconds
        }
        if let start = try document.optionalObject("start") {
            try start.rejectUnknown(allowed: ["includeStaleDate", "includeRelevanceScore"])
            rules.startIncludesStaleDate = try start.optionalBool("includeStaleDate") ?? rules.startIncludesStaleDate
            rules.startIncludesRelevanceScore =
                try start.optionalBool("includeRelevanceScore") ?? rules.startIncludesRelevanceScore
        }
        if let bytes = try document.optionalInteger("maximumPushBytes") {
            guard (256...4096).contains(bytes) else {
                throw document.invalid("maximumPushBytes", "must be between 256 and 4096 (the APNs limit)")
            }
            rules.maximumPushBytes = bytes
        }
        if let budget = try document.optionalObject("budget") {
            try budget.rejectUnknown(allowed: ["priority10PerHour", "priority10PerHourFrequent"])
            for key in ["priority10PerHour", "priority10PerHourFrequent"] {
                guard let allowance = try budget.optionalInteger(key) else { continue }
                guard allowance > 0 else {
                    throw budget.invalid(key, "must be positive (start and end always go at 10 and count)")
                }
                if key == "priority10PerHour" {
                    rules.budget.priority10PerHour = allowance
                } else {
                    rules.budget.priority10PerHourFrequent = allowance
                }
            }
        }
        if let seconds = try document.optionalInteger("progressIntervalSeconds") {
            guard seconds >= 0 else { throw document.invalid("progressIntervalSeconds", "must not be negative") }
            rules.progressIntervalSeconds = seconds
        }
        if let seconds = try document.optionalInteger("activityRenewalSeconds") {
            // iOS ends a Live Activity after 8 hours: a renewal later than that comes too late.
            guard seconds > 0, seconds < 8 * 3600 else {
                throw document.invalid("activityRenewalSeconds", "must be positive and under 28800 (iOS's 8 hours)")
            }
            rules.activityRenewalSeconds = seconds
        }
        if let alertObject = try document.optionalObject("renewalAlert") {
            try alertObject.rejectUnknown(allowed: ["title", "body", "sound"])
            rules.renewalAlert = AlertContent(
                title: try alertObject.string("title", maxBytes: 512),
                body: try alertObject.string("body", maxBytes: 1024),
                sound: try alertObject.optionalString("sound", maxBytes: 256))
        }
        if let renewals = try document.optionalInteger("maxRenewals") {
            guard renewals >= 0 else { throw document.invalid("maxRenewals", "must not be negative") }
            rules.maxRenewals = renewals
        }
        if let seconds = try document.optionalInteger("activityLifetimeSeconds") {
            guard seconds > 0, seconds <= 8 * 3600 else {
                throw document.invalid("activityLifetimeSeconds", "must be positive and at most 28800 (iOS's 8 hours)")
            }
            rules.activityLifetimeSeconds = seconds
        }
        // A renewal after the activity lapsed would come too late: the lapse is iOS's end.
        guard rules.activityLifetimeSeconds > rules.activityRenewalSeconds else {
            throw document.invalid(
                "activityLifetimeSeconds",
                "must be greater than activityRenewalSeconds (\(rules.activityRenewalSeconds))")
        }
        if let channels = try document.optionalObject("channels") {
            try channels.rejectUnknown(allowed: ["deleteAfterEndSeconds"])
            if let seconds = try channels.optionalInteger("deleteAfterEndSeconds") {
                guard seconds >= 0 else { throw channels.invalid("deleteAfterEndSeconds", "must not be negative") }
                rules.channelDeleteAfterEndSeconds = seconds
            }
        }
        if let location = try document.optionalObject("location") { rules.location = try parseLocation(location) }
        if let labels = try document.optionalObject("trackingPage") {
            rules.trackingLabels = try rules.trackingLabels.overlaid(by: labels)
        }
        if let locales = try document.optionalObject("locales") {
            rules.locales = try parseLocales(locales, defaults: rules)
        }
        // Every language's texts are held to the budget (`parseLocales` checks each locale's): the longest
        // text of any locale counts.
        try checkFallbackBudget(rules, path: "")
        return rules
    }

    /// Refuses a fallback notification over the push budget, naming its key path (under `path`). It is
    /// measured at its largest: with the longest visit id the API accepts.
    static func checkFallbackBudget(_ rules: ProjectionRules, path: String) throws(FieldProblem) {
        let longestVisitId = String(repeating: "v", count: IdGrammar.maximumBytes)
        for status in VisitStatus.allCases {
            guard let fallback = rules.rule(for: status).fallbackAlert else { continue }
            let size = fallback.body(visitId: longestVisitId, status: status).count
            guard size <= rules.maximumPushBytes else {
                throw FieldProblem(
                    kind: .invalidValue, path: "\(path)statuses.\(status.rawValue).fallbackAlert",
                    reason: "the notification would be \(size) bytes, over the \(rules.maximumPushBytes)-byte push budget")
            }
        }
    }

    static func parseRule(_ object: JSONObjectReader, status: VisitStatus) throws(FieldProblem) -> StatusRule {
        try object.rejectUnknown(allowed: [
            "relevance", "alert", "staleAfterSeconds", "staleNotBeforeArrivalStart", "dismissal", "fallbackAlert",
        ])
        let relevance = try object.double("relevance")
        guard relevance >= 0 else { throw object.invalid("relevance", "must not be negative") }
        var alert: AlertContent?
        if let alertObject = try object.optionalObject("alert") {
            try alertObject.rejectUnknown(allowed: ["title", "body", "sound"])
            alert = AlertContent(
                title: try alertObject.text("title", maxBytes: 512),
                body: try alertObject.text("body", maxBytes: 1024),
                sound: try alertObject.optionalString("sound", maxBytes: 256))
        }
        var rule = StatusRule(relevance: relevance, alert: alert)
        if let fallbackObject = try object.optionalObject("fallbackAlert") {
            try fallbackObject.rejectUnknown(allowed: ["title", "body"])
            rule.fallbackAlert = FallbackAlert(
                title: try fallbackObject.text("title", maxBytes: 4096),
                body: try fallbackObject.text("body", maxBytes: 4096))
        }
        if status.hasEnded {
            for key in ["staleAfterSeconds", "staleNotBeforeArrivalStart"] where object.value(key) != nil {
                throw object.invalid(key, "an ended visit's end push carries no stale date")
            }
            if alert != nil { throw object.invalid("alert", "an end push carries no alert (contract §5)") }
            let dismissal = try object.object("dismissal")
            try dismissal.rejectUnknown(allowed: ["policy", "seconds"])
            switch try dismissal.string("policy") {
            case "immediate": rule.dismissal = .immediate
            case "default": rule.dismissal = .default
            case "after":
                let seconds = try dismissal.integer("seconds")
                // iOS keeps an ended activity on the Lock Screen for at most 4 hours.
                guard (0...14_400).contains(seconds) else {
                    throw dismissal.invalid(
                        "seconds", "must be between 0 and 14400 (iOS keeps an ended activity 4 hours at most)")
                }
                rule.dismissal = .after(seconds: seconds)
            default:
                throw dismissal.invalid("policy", "expected \"immediate\", \"default\" or \"after\"")
            }
            if case .after = rule.dismissal {
            } else if dismissal.value("seconds") != nil {
                throw dismissal.invalid("seconds", "only the \"after\" policy takes seconds")
            }
        } else {
            if object.value("dismissal") != nil {
                throw object.invalid("dismissal", "only completed, cancelled and failed have a dismissal policy")
            }
            let stale = try object.integer("staleAfterSeconds")
            guard stale > 0 else { throw object.invalid("staleAfterSeconds", "must be positive") }
            rule.staleAfterSeconds = stale
            rule.staleNotBeforeArrivalStart = try object.optionalBool("staleNotBeforeArrivalStart") ?? false
            if status == .scheduled, alert == nil {
                throw FieldProblem(
                    kind: .missing, path: object.fieldPath("alert"),
                    reason: "required: a push-to-start must carry an alert")
            }
        }
        return rule
    }
}

extension JSONObjectReader {
    /// An `apns-priority`: 5 or 10 only. APNs also knows 1, but Live Activity pushes use 5 and 10, and the
    /// outbox (and its `deliveries.priority` CHECK) accepts no other: refused here, at load, rather than
    /// failing every push of that kind later.
    fileprivate func priority(_ key: String) throws(FieldProblem) -> Int? {
        guard let priority = try optionalInteger(key) else { return nil }
        guard [5, 10].contains(priority) else { throw invalid(key, "Live Activity priorities are 5 or 10") }
        return priority
    }
}
