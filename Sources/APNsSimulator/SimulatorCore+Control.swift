import Foundation
import Runtime

/// The control endpoint, served on the simulator's own port for other processes:
/// `GET /_sim/deliveries[?token=HEX&since=SEQUENCE]` (JSON list), `POST /_sim/faults` (JSON
/// `FaultSettings`), `POST /_sim/reset`, `GET /_sim/stats`.
extension SimulatorCore {
    func controlPlan(for request: ReceivedRequest) -> ResponsePlan {
        let (status, body) = control(request)
        return ResponsePlan(
            action: .answer(status: status, headers: [("content-type", "application/json")], body: Array(body.utf8)),
            delay: 0, record: nil)
    }

    private func control(_ request: ReceivedRequest) -> (Int, String) {
        let parts = request.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let route = String(parts[0])
        let query = parts.count > 1 ? SimulatorCore.parseQuery(String(parts[1])) : [:]
        switch (request.method, route) {
        case ("GET", "/_sim/deliveries"):
            var list = deliveries()
            if let token = query["token"]?.lowercased() { list = list.filter { $0.deviceToken?.lowercased() == token } }
            if let since = query["since"].flatMap(Int.init) { list = list.filter { $0.sequence > since } }
            return (200, "[" + list.map(SimulatorCore.encode).joined(separator: ",") + "]")
        case ("POST", "/_sim/faults"):
            do {
                let settings = try JSONDecoder().decode(FaultSettings.self, from: Data(request.body))
                apply(settings)
                return (200, "{\"ok\":true}")
            } catch {
                return (400, "{\"reason\":\"BadFaults\",\"message\":\"the body is not a valid fault description\"}")
            }
        case ("POST", "/_sim/reset"):
            reset()
            return (200, "{\"ok\":true}")
        case ("GET", "/_sim/stats"):
            let s = statistics()
            return (
                200,
                "{\"connectionsAccepted\":\(s.connectionsAccepted),\"connectionsOpen\":\(s.connectionsOpen),"
                    + "\"maximumConcurrentStreams\":\(s.maximumConcurrentStreams),\"requestsTotal\":\(s.requestsTotal)}"
            )
        case (_, "/_sim/deliveries"), (_, "/_sim/faults"), (_, "/_sim/reset"), (_, "/_sim/stats"):
            return (405, "{\"reason\":\"MethodNotAllowed\"}")
        default:
            return (404, "{\"reason\":\"BadPath\"}")
        }
    }

    static func parseQuery(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
            let value = kv.count > 1 ? (String(kv[1]).removingPercentEncoding ?? String(kv[1])) : ""
            result[key] = value
        }
        return result
    }

    /// One delivery as a JSON object (the body embedded as JSON when it parsed, else `null`).
    static func encode(_ d: SimulatedDelivery) -> String {
        var out = "{\"sequence\":\(d.sequence),\"receivedAt\":\(d.receivedAt),\"connectionId\":\(d.connectionID)"
        out += ",\"streamId\":\(d.streamID),\"method\":"
        JSONString.appendQuoted(d.method, to: &out)
        out += ",\"path\":"
        JSONString.appendQuoted(d.path, to: &out)
        out += ",\"token\":"
        if let t = d.deviceToken { JSONString.appendQuoted(t, to: &out) } else { out += "null" }
        out += ",\"headers\":{"
        var seen = Set<String>()
        var first = true
        for (name, _) in d.headers.reversed() where seen.insert(name).inserted {
            if !first { out += "," }
            first = false
            JSONString.appendQuoted(name, to: &out)
            out += ":"
            JSONString.appendQuoted(d.header(name) ?? "", to: &out)
        }
        out += "},\"providerToken\":"
        if let p = d.providerToken {
            var members: [(key: String, value: ReceivedJSON)] = []
            if let v = p.algorithm { members.append(("alg", .string(v))) }
            if let v = p.keyID { members.append(("kid", .string(v))) }
            if let v = p.issuer { members.append(("iss", .string(v))) }
            if let v = p.issuedAt { members.append(("iat", .number(String(v)))) }
            out += ReceivedJSON.object(members).encoded()
        } else {
            out += "null"
        }
        out += ",\"payloadSize\":\(d.payloadSize),\"body\":" + (d.json?.encoded() ?? "null")
        out += ",\"status\":\(d.status),\"reason\":"
        if let r = d.reason { JSONString.appendQuoted(r, to: &out) } else { out += "null" }
        out += ",\"apnsId\":"
        JSONString.appendQuoted(d.apnsID, to: &out)
        if let t = d.unregisteredTimestamp { out += ",\"timestamp\":\(t)" }
        out += ",\"answered\":\(d.answered)"
        if let t = d.answeredAt { out += ",\"answeredAt\":\(t)" }
        out += "}"
        return out
    }
}
