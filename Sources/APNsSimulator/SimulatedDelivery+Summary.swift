import JSON
import Runtime

extension SimulatedDelivery {
    /// One readable line per push for the demo, e.g.
    /// `16:02:11.417 200 update p10 token=3f1a9c2e alert="Service visit" {status=nearby kilometresAway=1.2 …} stale-date=1790000600`.
    ///
    /// The device token appears only as its `Logger.fingerprint` (the same short name the server's
    /// logs use); the provider token never.
    public var summaryLine: String {
        var parts: [String] = [SimulatedDelivery.clockText(receivedAt)]
        parts.append(status == 0 ? "---" : String(status))
        if let reason { parts.append(reason) }
        let aps = self.aps
        parts.append(aps?["event"]?.stringValue ?? (header("apns-push-type") == "alert" ? "notification" : "-"))
        parts.append("p" + (header("apns-priority") ?? "10"))
        if let token = deviceToken { parts.append("token=" + Logger.fingerprint(token)) }
        if let channel = header("apns-channel-id") {
            // A broadcast, or a channel-management request (its verb and path say which).
            if !path.hasPrefix("/4/") { parts.append(method + " " + (path.split(separator: "/").last.map(String.init) ?? "")) }
            parts.append("channel=" + channel)
        } else if path.hasPrefix("/1/") {
            parts.append(method + " " + (path.split(separator: "/").last.map(String.init) ?? ""))
        }
        if let alert = aps?["alert"] {
            let title = alert["title"]?.stringValue ?? alert.stringValue ?? alert["body"]?.stringValue ?? ""
            parts.append("alert=" + SimulatedDelivery.quoted(title))
        }
        if let state = aps?["content-state"] { parts.append(SimulatedDelivery.compact(state)) }
        for key in ["stale-date", "relevance-score", "dismissal-date"] {
            if let value = aps?[key] { parts.append("\(key)=" + SimulatedDelivery.scalarText(value)) }
        }
        return parts.joined(separator: " ")
    }

    /// `{key=value …}` for an object, values kept short.
    static func compact(_ value: JSONValue) -> String {
        guard case .object(let members) = value else { return scalarText(value) }
        return "{" + members.map { "\($0.key)=" + scalarText($0.value) }.joined(separator: " ") + "}"
    }

    static func scalarText(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): quoted(s)
        default: value.serializedString()
        }
    }

    /// A string kept short and quoted as the logger quotes values.
    static func quoted(_ s: String) -> String {
        Logger.quoteIfNeeded(s.count > 60 ? String(s.prefix(57)) + "..." : s)
    }

    /// `HH:MM:SS.mmm` UTC.
    static func clockText(_ seconds: Double) -> String {
        let millis = Int64((seconds * 1000).rounded(.down))
        let day = ((millis % 86_400_000) + 86_400_000) % 86_400_000
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let ms = day % 1000
        let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(two(day / 3_600_000)):\(two(day / 60_000 % 60)):\(two(day / 1000 % 60)).\(msText)"
    }
}
