import Foundation
import Postgres
import Runtime
import Testing

/// The ledger's routes over real HTTP: what each device shows (`GET …/live-activities`), what the app
/// reports (`PUT …/live-activities/{activityId}/state`), one activity per device, and bad input.
@Suite(.timeLimit(.minutes(5))) struct LiveActivityRouteTests {
    func register(_ api: APIServer, _ visit: String, _ activity: String, key: String, device: String?, token: String)
        async throws -> RawResponse
    {
        let d = device.map { ",\"deviceId\":\"\($0)\"" } ?? ""
        return try await api.call(
            "PUT", "/v1/visits/\(visit)/live-activities/\(activity)", key: key,
            json: "{\"pushToken\":\"\(token)\",\"environment\":\"sandbox\",\"version\":1\(d)}")
    }

    func report(_ api: APIServer, _ visit: String, _ activity: String, _ state: String, key: String) async throws
        -> RawResponse
    {
        try await api.call(
            "PUT", "/v1/visits/\(visit)/live-activities/\(activity)/state", key: key, json: "{\"state\":\"\(state)\"}")
    }

    func ledger(_ api: APIServer, _ visit: String, key: String) async throws -> [[String: Any]] {
        let answer = try await api.call("GET", "/v1/visits/\(visit)/live-activities", key: key)
        #expect(answer.status == 200)
        return answer.json?["liveActivities"] as? [[String: Any]] ?? []
    }

    @Test func aSecondActivityOnADeviceReplacesTheFirstAndTheLedgerShowsBoth() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let customerId = uniqueID("c")
            try await api.schedule(id, customer: customerId, technician: "t-1")
            let customer = try await api.key(.customer, customerId)
            #expect(try await register(api, id, "a-1", key: customer, device: "d-1", token: pushToken("one")).status == 204)
            #expect(try await register(api, id, "a-2", key: customer, device: "d-1", token: pushToken("two")).status == 204)

            // The older activity gets an end that dismisses it at once.
            let ends = try await api.pool.withConnection { c in
                try c.query(
                    "SELECT body FROM deliveries WHERE visit_id = \(id) AND activity_id = 'a-1' AND kind = 'end'"
                ).map { try $0.string("body") }
            }
            let end = try #require(
                ends.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
            let aps = try #require(end["aps"] as? [String: Any])
            #expect(ends.count == 1)
            #expect(aps["dismissal-date"] as? Int == aps["timestamp"] as? Int)

            let entries = try await ledger(api, id, key: customer)
            #expect(entries.map { $0["activityId"] as? String } == ["a-2", "a-1"])
            #expect(entries.map { $0["state"] as? String } == ["active", "replaced"])
            let first = try #require(entries.first)
            #expect(first["deviceId"] as? String == "d-1" && first["environment"] as? String == "sandbox")
            #expect(first["origin"] as? String == "app")
            #expect(first["beganAt"] is Int && first["renewsAt"] is NSNull && first["lapsesAt"] is Int)
            #expect(
                Set(first.keys) == [
                    "activityId", "deviceId", "environment", "origin", "state", "beganAt", "renewsAt", "lapsesAt",
                    "lastTimestamp", "lastAcknowledgedAt", "priority10LeftThisHour",
                ])
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: customer).json?["liveActivities"] as? Int == 1)

            // Who may read it: the visit's customer, dispatchers and ops; never a token in it.
            let text = try await api.call("GET", "/v1/visits/\(id)/live-activities", key: api.dispatcher).text
            #expect(!text.contains(pushToken("one")) && !text.contains(pushToken("two")))
            #expect(try await api.call("GET", "/v1/visits/\(id)/live-activities", key: api.ops).status == 200)
            let technician = try await api.key(.technician, "t-1")
            #expect(try await api.call("GET", "/v1/visits/\(id)/live-activities", key: technician).status == 403)
            let stranger = try await api.key(.customer, uniqueID("c"))
            #expect(try await api.call("GET", "/v1/visits/\(id)/live-activities", key: stranger).status == 404)
            #expect(try await api.call("GET", "/v1/visits/\(uniqueID("v"))/live-activities", key: api.dispatcher).status == 404)
        }
    }

    @Test func stateReportsAreCheckedIdempotentAndFinal() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let customerId = uniqueID("c")
            try await api.schedule(id, customer: customerId)
            let customer = try await api.key(.customer, customerId)
            #expect(try await register(api, id, "a-1", key: customer, device: "d-1", token: pushToken("st")).status == 204)

            let unknown = try await report(api, id, "a-nope", "active", key: customer)
            #expect(unknown.status == 404)
            let wrong = try await report(api, id, "a-1", "gone", key: customer)
            #expect(wrong.status == 422)
            let message = (wrong.json?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("active, stale, ended, dismissed"))
            let stranger = try await api.key(.customer, uniqueID("c"))
            #expect(try await report(api, id, "a-1", "dismissed", key: stranger).status == 404)
            #expect(try await report(api, id, "a-1", "dismissed", key: api.dispatcher).status == 403)
            let badDevice = try await register(api, id, "a-2", key: customer, device: "d 1/../x", token: pushToken("bad"))
            #expect(badDevice.status == 422 && badDevice.text.contains("deviceId"))

            #expect(try await report(api, id, "a-1", "stale", key: customer).status == 204)
            #expect(try await ledger(api, id, key: customer).first?["state"] as? String == "stale")
            #expect(try await report(api, id, "a-1", "dismissed", key: customer).status == 204)
            #expect(try await report(api, id, "a-1", "dismissed", key: customer).status == 204)
            // A report for a retired activity changes nothing.
            #expect(try await report(api, id, "a-1", "active", key: customer).status == 204)
            #expect(try await ledger(api, id, key: customer).first?["state"] as? String == "dismissed")
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: customer).json?["liveActivities"] as? Int == 0)
            let changes = api.environment.metrics.value("livevisits_live_activity_changes_total", labels: ["state": "dismissed"])
            #expect(changes ?? 0 >= 1)

            // The next event pushes nothing to it.
            let before = try await api.pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM deliveries WHERE visit_id = \(id)").first?.int("n") ?? 0
            }
            #expect(try await api.post(id, #"{"type":"enRoute"}"#).status == 201)
            let after = try await api.pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM deliveries WHERE visit_id = \(id)").first?.int("n") ?? 0
            }
            #expect(after == before)
        }
    }
}
