import Foundation
import JSON
import Runtime

/// The control endpoint, served on the simulator's own port for other processes:
/// `GET /_sim/deliveries[?token=HEX&since=SEQUENCE]` (JSON list), `POST /_sim/faults` (JSON
/// `FaultSettings`), `POST /_sim/reset`, `GET /_sim/stats`.
extension SimulatorCore {
    func controlPlan(for request: ReceivedRequest) -> ResponsePlan {
        let (status, body) = control(request)
        return ResponsePlan(
            action: .answer(status: status, headers: [("content-type", "application/json")], body: body.serialized()),
            delay: 0, record: nil)
    }

    private func control(_ request: ReceivedRequest) -> (Int, JSONValue) {
        let parts = request.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let route = String(parts[0])
        let query = parts.count > 1 ? SimulatorCore.parseQuery(String(parts[1])) : [:]
        switch (request.method, route) {
        case ("GET", "/_sim/deliveries"):
            var list = deliveries()
            if let token = query["token"]?.lowercased() { list = list.filter { $0.deviceToken?.lowercased() == token } }
            if let since = query["since"].flatMap(Int.init) { list = list.filter { $0.sequence > since } }
            return (200, .array(list.map(SimulatorCore.encode)))
        case ("POST", "/_sim/faults"):
            do {
                apply(try FaultSettings(json: try JSONValue.parse(request.body)))
                return (200, ["ok": true])
            } catch let problem as FieldProblem {
                return (400, ["reason": "BadFaults", "message": .string(problem.message)])
            } catch {
                return (400, ["reason": "BadFaults", "message": "the body is not a valid fault description"])
            }
        case ("POST", "/_sim/reset"):
            reset()
            return (200, ["ok": true])
        case ("GET", "/_sim/stats"):
            let s = statistics()
            return (
                200,
                [
                    "connectionsAccepted": .number(Double(s.connectionsAccepted)),
                    "connectionsOpen": .number(Double(s.connectionsOpen)),
                    "maximumConcurrentStreams": .number(Double(s.maximumConcurrentStreams)),
                    "requestsTotal": .number(Double(s.requestsTotal)),
                ]
            )
        case (_, "/_sim/deliveries"), (_, "/_sim/faults"), (_, "/_sim/reset"), (_, "/_sim/stats"):
            return (405, ["reason": "MethodNotAllowed"])
        default:
            return (404, ["reason": "BadPath"])
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
    static func encode(_ d: SimulatedDelivery) -> JSONValue {
        func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
        var headers: [JSONMember] = []
        var seen = Set<String>()
        for (name, _) in d.headers.reversed() where seen.insert(name).inserted {
            headers.append(JSONMember(name, .string(d.header(name) ?? "")))
        }
        var token: JSONValue = .null
        if let p = d.providerToken {
            var members: [JSONMember] = []
            if let v = p.algorithm { members.append(JSONMember("alg", .string(v))) }
            if let v = p.keyID { members.append(JSONMember("kid", .string(v))) }
            if let v = p.issuer { members.append(JSONMember("iss", .string(v))) }
            if let v = p.issuedAt { members.append(JSONMember("iat", .number(Double(v)))) }
            token = .object(members)
        }
        var members: [JSONMember] = [
            JSONMember("sequence", .number(Double(d.sequence))), JSONMember("receivedAt", .number(d.receivedAt)),
            JSONMember("connectionId", .number(Double(d.connectionID))), JSONMember("streamId", .number(Double(d.streamID))),
            JSONMember("method", .string(d.method)), JSONMember("path", .string(d.path)),
            JSONMember("token", optional(d.deviceToken)), JSONMember("headers", .object(headers)),
            JSONMember("providerToken", token), JSONMember("payloadSize", .number(Double(d.payloadSize))),
            JSONMember("body", d.json ?? .null), JSONMember("status", .number(Double(d.status))),
            JSONMember("reason", optional(d.reason)), JSONMember("apnsId", .string(d.apnsID)),
        ]
        if let t = d.unregisteredTimestamp { members.append(JSONMember("timestamp", .number(Double(t)))) }
        if let u = d.uniqueID { members.append(JSONMember("uniqueId", .string(u))) }
        members.append(JSONMember("answered", .bool(d.answered)))
        if let t = d.answeredAt { members.append(JSONMember("answeredAt", .number(t))) }
        return .object(members)
    }
}
