import Foundation
import Testing

/// The one id grammar (contract §15): every id in a body is 1 to 128 of `A–Z a–z 0–9 . _ ~ -`, else 422
/// `invalid_id` with `"field"` naming it; an id in a path outside the grammar is not found (404). So an id a
/// body was allowed to carry is always one a path can name: every customer can be erased.
@Suite(.timeLimit(.minutes(5))) struct IdGrammarTests {
    /// Ids outside the grammar, as JSON string contents: a space, a slash, an at sign, a bidi override, a bell
    /// (escaped), percent-encoding, non-ASCII, 129 bytes, empty.
    static let badIds = [
        "Jane Doe", "t/1", "a@b", "c\u{202E}7", #"c\u00077"#, "a%20b", "é", String(repeating: "x", count: 129), "",
    ]
    static let longest = String(repeating: "y", count: 127) + "~"

    func expectInvalidId(
        _ response: RawResponse, field: String, _ note: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = response.json?["error"] as? [String: Any]
        #expect(response.status == 422, "\(note): \(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(error?["code"] as? String == "invalid_id", "\(note): \(response.text)", sourceLocation: sourceLocation)
        #expect(error?["field"] as? String == field, "\(note): \(response.text)", sourceLocation: sourceLocation)
        #expect((error?["message"] as? String)?.hasPrefix("\(field): ") == true, "\(note)", sourceLocation: sourceLocation)
    }

    func reassignment(technician: String) -> String {
        #"{"type":"reassigned","technician":{"id":"\#(technician)","name":"Kim","avatarSymbol":"a","vanDescription":"v"}}"#
    }

    @Test func everyIdFieldOfABodyOutsideTheGrammarIsInvalidIdNamingIt() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("v")
            try await api.schedule(visit, customer: "c-1")
            let customer = try await api.key(.customer, "c-1")
            for bad in Self.badIds {
                expectInvalidId(
                    try await api.call("POST", "/v1/visits", key: api.dispatcher, json: APIServer.visitJSON(bad)),
                    field: "visitId", "visitId \(bad.debugDescription)")
                expectInvalidId(
                    try await api.call(
                        "POST", "/v1/visits", key: api.dispatcher, json: APIServer.visitJSON(uniqueID("v"), customer: bad)),
                    field: "customerId", "customerId \(bad.debugDescription)")
                expectInvalidId(
                    try await api.call(
                        "POST", "/v1/visits", key: api.dispatcher, json: APIServer.visitJSON(uniqueID("v"), technician: bad)),
                    field: "technician.id", "technician.id \(bad.debugDescription)")
                expectInvalidId(
                    try await api.post(visit, reassignment(technician: bad)), field: "technician.id",
                    "reassigned technician.id \(bad.debugDescription)")
                expectInvalidId(
                    try await api.call(
                        "PUT", "/v1/visits/\(visit)/live-activities/a-1", key: customer,
                        json: #"{"pushToken":"\#(pushToken("t"))","environment":"sandbox","deviceId":"\#(bad)"}"#),
                    field: "deviceId", "deviceId \(bad.debugDescription)")
                expectInvalidId(
                    try await api.call(
                        "POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"customer","subject":"\#(bad)"}"#),
                    field: "subject", "subject \(bad.debugDescription)")
            }
            // Nothing of it was stored: the visit still has its first technician and no activity.
            let view = try await api.call("GET", "/v1/visits/\(visit)", key: api.dispatcher)
            #expect(view.json?["version"] as? Int == 1 && view.json?["liveActivities"] as? Int == 0)
        }
    }

    @Test func theErrorObjectNamesTheFieldAlsoUnderAnIdempotencyKey() async throws {
        try await withAPIServer { api in
            let body = APIServer.visitJSON(uniqueID("v"), technician: "t 42")
            let expected =
                #"{"error":{"code":"invalid_id","message":"technician.id: expected 1 to 128 of A-Z a-z 0-9 . _ ~ -","field":"technician.id"}}"#
            #expect(try await api.call("POST", "/v1/visits", key: api.dispatcher, json: body).text == expected)
            let key = [("Idempotency-Key", uniqueID("k"))]
            let first = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: body, headers: key)
            let again = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: body, headers: key)
            #expect(first.status == 422 && first.text == expected)
            #expect(again.status == 422 && again.text == expected, "the kept answer keeps the field")
            // Other refusals answer as before, without a field.
            let other = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher, json: #"{"customerId":"c-1","visitId":"v-x"}"#)
            #expect(other.status == 422 && (other.json?["error"] as? [String: Any])?["field"] == nil, "\(other.text)")
        }
    }

    @Test func idsOf128BytesAreAcceptedEverywhere() async throws {
        try await withAPIServer { api in
            let id = Self.longest
            let scheduled = try await api.schedule(id, customer: id, technician: id)
            #expect(scheduled.status == 201, "\(scheduled.text)")
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher).json?["customerId"] as? String == id)
            let technician = try await api.key(.technician, id)
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: technician).status == 200)
            let minted = try await api.call(
                "POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"customer","subject":"\#(id)"}"#)
            #expect(minted.status == 201 && minted.json?["subject"] as? String == id, "\(minted.text)")
            let customer = try #require(minted.json?["key"] as? String)
            let activity = try await api.call(
                "PUT", "/v1/visits/\(id)/live-activities/\(id)", key: customer,
                json: #"{"pushToken":"\#(pushToken("long"))","environment":"sandbox","deviceId":"\#(id)"}"#)
            #expect(activity.status == 204, "\(activity.text)")
            let device = try await api.call(
                "PUT", "/v1/customers/\(id)/push-to-start-tokens/\(id)", key: customer,
                json: #"{"pushToken":"\#(pushToken("pts"))","environment":"sandbox"}"#)
            #expect(device.status == 204, "\(device.text)")
            #expect(try await api.post(id, reassignment(technician: "t.9_~-Z")).status == 201)
        }
    }

    @Test func pathIdsOutsideTheGrammarAreNotFound() async throws {
        try await withAPIServer { api in
            let visit = uniqueID("v")
            try await api.schedule(visit, customer: "c-1")
            let customer = try await api.key(.customer, "c-1")
            let token = #"{"pushToken":"\#(pushToken("p"))","environment":"sandbox"}"#
            let tooLong = String(repeating: "z", count: 129)
            for bad in ["Jane%20Doe", "a%40b", "%E2%80%AE", tooLong] {
                let calls: [(String, String, String, String?)] = [
                    ("GET", "/v1/visits/\(bad)", api.dispatcher, nil),
                    ("DELETE", "/v1/customers/\(bad)", api.ops, nil),
                    ("PUT", "/v1/visits/\(visit)/live-activities/\(bad)", customer, token),
                    ("PUT", "/v1/customers/\(bad)/push-to-start-tokens/d-1", customer, token),
                    ("PUT", "/v1/customers/c-1/push-to-start-tokens/\(bad)", customer, token),
                    (
                        "PUT", "/v1/customers/c-1/devices/\(bad)/preferences", customer,
                        #"{"liveActivitiesEnabled":true,"frequentPushesEnabled":true}"#
                    ),
                ]
                for (method, path, key, json) in calls {
                    let answer = try await api.call(method, path, key: key, json: json)
                    #expect(answer.status == 404, "\(method) \(path): \(answer.status) \(answer.text)")
                }
            }
        }
    }
}
