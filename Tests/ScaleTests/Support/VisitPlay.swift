import Foundation
import JSON

/// One visit as the tests play it through the API: booked, its Live Activity registered at version 1
/// (nothing to push yet), then `enRoute`, `nearby`, `onSite` and `completed`: 5 events, 4 pushes planned.
enum VisitPlay {
    /// One visit's six requests; returns the answers that were not what the contract says.
    static func play(visit v: Int, apis: [APIClient], dispatcher: String, customer: String) async throws -> [String] {
        let id = "v-\(v)"
        let now = Int(Date().timeIntervalSince1970)
        var problems: [String] = []
        var turn = v
        func send(_ method: String, _ path: String, key: String, body: JSONValue, expect: Int) async throws {
            let api = apis[turn % apis.count]
            turn += 1
            let answer = try await api.send(method, path, key: key, body: body)
            if answer.status != expect {
                problems.append("\(method) \(path) → \(answer.status) \(answer.json.serializedString().prefix(200))")
            }
        }
        let visitBody: JSONValue = [
            "visitId": .string(id), "customerId": "c-1",
            "attributes": ["customerFirstName": "Alex", "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"],
            "technician": ["id": "t-1", "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"],
            "arrivalWindow": ["start": .number(Double(now + 600)), "end": .number(Double(now + 1200))],
            "kilometresAway": 14.0,
        ]
        try await send("POST", "/v1/visits", key: dispatcher, body: visitBody, expect: 201)
        try await send(
            "PUT", "/v1/visits/\(id)/live-activities/a-\(v)", key: customer,
            body: ["pushToken": .string(token("t\(v)")), "environment": "sandbox", "version": 1], expect: 204)
        let steps: [JSONValue] = [
            ["type": "enRoute"], ["type": "nearby", "kilometresAway": 1.2], ["type": "onSite"], ["type": "completed"],
        ]
        for step in steps { try await send("POST", "/v1/visits/\(id)/events", key: dispatcher, body: step, expect: 201) }
        return problems
    }
}
