import Foundation
import Testing

/// `GET /v1/visits/{id}/deliveries` (contract §11): a visit's pushes for dispatchers and ops, newest first,
/// in the contract's shape, never a token.
@Suite(.timeLimit(.minutes(5))) struct VisitDeliveriesTests {
    func deliveries(_ answer: RawResponse) -> [[String: Any]] {
        answer.json?["deliveries"] as? [[String: Any]] ?? []
    }

    @Test func listsTheVisitsPushesNewestFirstWithoutTokens() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let other = uniqueID("v")
            try await api.schedule(id, customer: "c-1")
            try await api.schedule(other, customer: "c-1")
            let customer = try await api.key(.customer, "c-1")
            let token = pushToken("deliveries-\(id)")
            let registered = try await api.call(
                "PUT", "/v1/visits/\(id)/live-activities/a-1", key: customer,
                json: "{\"pushToken\":\"\(token)\",\"environment\":\"sandbox\"}")
            #expect(registered.status == 204)
            #expect(try await api.post(id, #"{"type":"enRoute"}"#).status == 201)
            #expect(try await api.post(id, #"{"type":"cancelled","reason":"no access"}"#).status == 201)

            let answer = try await api.call("GET", "/v1/visits/\(id)/deliveries", key: api.dispatcher)
            #expect(answer.status == 200)
            #expect(answer.header("Cache-Control") == "no-store")
            #expect(!answer.text.lowercased().contains(token))
            let list = deliveries(answer)
            #expect(list.count >= 2)
            let ids = list.compactMap { $0["id"] as? Int }
            #expect(ids == ids.sorted(by: >))
            #expect(list.first?["kind"] as? String == "end")
            for d in list {
                #expect(
                    Set(d.keys) == [
                        "id", "kind", "target", "priority", "state", "attempts", "lastStatus", "lastReason", "createdAt",
                        "sentAt",
                    ])
                #expect(d["target"] as? String == "activity")
                #expect([5, 10].contains(d["priority"] as? Int ?? 0))
                #expect(d["sentAt"] is NSNull)
            }
            // Another visit's pushes are not listed; a visit without any lists none.
            #expect(deliveries(try await api.call("GET", "/v1/visits/\(other)/deliveries", key: api.ops)).isEmpty)
            #expect(deliveries(try await api.call("GET", "/v1/visits/\(id)/deliveries?limit=1", key: api.ops)).count == 1)
        }
    }

    /// Each kind of target is named as §11 names it: a start to a push-to-start token is `pushToStart`,
    /// a fallback notification to a device `device`, an activity's update `activity`.
    @Test func namesEachKindOfTarget() async throws {
        try await withAPIServer { api in
            let customerId = uniqueID("c")
            let customer = try await api.key(.customer, customerId)
            let device = uniqueID("d")
            let pushToStart = try await api.call(
                "PUT", "/v1/customers/\(customerId)/push-to-start-tokens/\(device)", key: customer,
                json: "{\"pushToken\":\"\(pushToken("p2s-\(device)"))\",\"environment\":\"sandbox\"}")
            #expect(pushToStart.status == 204)
            let tablet = uniqueID("d")
            let preferences = try await api.call(
                "PUT", "/v1/customers/\(customerId)/devices/\(tablet)/preferences", key: customer,
                json: #"{"liveActivitiesEnabled":false,"frequentPushesEnabled":false}"#)
            #expect(preferences.status == 204)
            let notification = try await api.call(
                "PUT", "/v1/customers/\(customerId)/devices/\(tablet)/notification-token", key: customer,
                json: "{\"pushToken\":\"\(pushToken("alert-\(tablet)"))\",\"environment\":\"sandbox\"}")
            #expect(notification.status == 204)
            let id = uniqueID("v")
            try await api.schedule(id, customer: customerId)
            let registered = try await api.call(
                "PUT", "/v1/visits/\(id)/live-activities/a-1", key: customer,
                json: "{\"pushToken\":\"\(pushToken("la-\(id)"))\",\"environment\":\"sandbox\",\"deviceId\":\"\(device)\"}")
            #expect(registered.status == 204)
            #expect(try await api.post(id, #"{"type":"enRoute"}"#).status == 201)

            let list = deliveries(try await api.call("GET", "/v1/visits/\(id)/deliveries", key: api.dispatcher))
            let pairs = Set(
                list.compactMap { d in (d["kind"] as? String).flatMap { k in (d["target"] as? String).map { "\(k) \($0)" } } })
            #expect(pairs.contains("start pushToStart"), "\(pairs)")
            #expect(pairs.contains("alert device"), "\(pairs)")
            #expect(pairs.contains("update activity"), "\(pairs)")
            #expect(pairs.isSubset(of: ["start pushToStart", "alert device", "update activity"]), "\(pairs)")
        }
    }

    @Test func onlyDispatchersAndOpsMayReadThem() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, customer: "c-1", technician: "t-1")
            let customer = try await api.key(.customer, "c-1")
            let technician = try await api.key(.technician, "t-1")
            #expect(try await api.call("GET", "/v1/visits/\(id)/deliveries", key: customer).status == 403)
            #expect(try await api.call("GET", "/v1/visits/\(id)/deliveries", key: technician).status == 403)
            #expect(try await api.call("GET", "/v1/visits/\(id)/deliveries", key: nil).status == 401)
            #expect(try await api.call("GET", "/v1/visits/\(uniqueID("v"))/deliveries", key: api.dispatcher).status == 404)
            #expect(try await api.call("GET", "/v1/visits/\(id)/deliveries?limit=0", key: api.dispatcher).status == 422)
        }
    }
}
