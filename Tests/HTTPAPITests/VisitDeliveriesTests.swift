import APNsSimulator
import Foundation
import PersonalData
import TestSupport
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
                        "sentAt", "activityId", "deviceId", "channelId", "apnsId", "apnsUniqueId", "timestamp",
                        "contentState", "staleDate", "dismissalDate",
                    ])
                #expect(d["target"] as? String == "activity")
                #expect(d["activityId"] as? String == "a-1")
                #expect(d["deviceId"] is NSNull && d["channelId"] is NSNull && d["apnsUniqueId"] is NSNull)
                #expect((d["apnsId"] as? String).flatMap(UUID.init(uuidString:)) != nil)
                #expect([5, 10].contains(d["priority"] as? Int ?? 0))
                #expect(d["sentAt"] is NSNull)
            }
            // Another visit's pushes are not listed; a visit without any lists none.
            #expect(deliveries(try await api.call("GET", "/v1/visits/\(other)/deliveries", key: api.ops)).isEmpty)
            #expect(deliveries(try await api.call("GET", "/v1/visits/\(id)/deliveries?limit=1", key: api.ops)).count == 1)
        }
    }

    /// What each push carries for the Live Activity, read from the body it is sent with: its `aps.timestamp`,
    /// its content state (personal fields opened, as in every answer), stale and dismissal dates. The console
    /// draws what a phone shows from the acknowledged ones.
    @Test func eachPushSaysWhatItCarries() async throws {
        let file = try PersonalDataTests.keyFile()
        try await withAPIServer(personalData: PersonalDataKeys(current: file.key)) { api in
            let id = uniqueID("v")
            let customerId = uniqueID("c")
            try await api.schedule(id, customer: customerId)
            let customer = try await api.key(.customer, customerId)
            let token = pushToken("carries-\(id)")
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-1", key: customer,
                    json: "{\"pushToken\":\"\(token)\",\"environment\":\"sandbox\"}"
                ).status == 204)
            #expect(try await api.post(id, #"{"type":"enRoute","kilometresAway":4.5}"#).status == 201)
            let reason = "Gas meter locked \(id)"
            #expect(try await api.post(id, "{\"type\":\"failed\",\"reason\":\"\(reason)\"}").status == 201)

            let answer = try await api.call("GET", "/v1/visits/\(id)/deliveries", key: api.dispatcher)
            #expect(answer.status == 200)
            #expect(!answer.text.contains("enc:v1:"), "a sealed field reaches the answer opened")
            let list = deliveries(answer)
            let end = try #require(list.first { $0["kind"] as? String == "end" })
            let endState = try #require(end["contentState"] as? [String: Any])
            #expect(endState["status"] as? String == "failed")
            #expect(endState["vanDescription"] as? String == reason)
            #expect((end["dismissalDate"] as? Int ?? 0) >= (end["timestamp"] as? Int ?? .max))
            let enRoute = try #require(
                list.first { ($0["contentState"] as? [String: Any])?["status"] as? String == "enRoute" })
            #expect(enRoute["kind"] as? String == "update")
            #expect((enRoute["contentState"] as? [String: Any])?["kilometresAway"] as? Double == 4.5)
            let timestamp = try #require(enRoute["timestamp"] as? Int)
            #expect((enRoute["staleDate"] as? Int ?? 0) > timestamp)
            #expect(enRoute["dismissalDate"] is NSNull)
            #expect(timestamp <= end["timestamp"] as? Int ?? 0)
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
            // A notification carries no Live Activity state; a start does.
            for d in list where d["kind"] as? String == "alert" {
                #expect(d["contentState"] is NSNull && d["staleDate"] is NSNull && d["dismissalDate"] is NSNull)
            }
            let start = try #require(list.first { $0["kind"] as? String == "start" })
            #expect((start["contentState"] as? [String: Any])?["status"] as? String == "scheduled")
        }
    }

    /// Contract §13: a delivery names what it went to and carries the ids Apple's Push Notifications Console
    /// looks a push up by: its `apns-id` (the one APNs received) and, for an accepted sandbox push, the
    /// `apns-unique-id` APNs answered; a production push has none. Delivered for real through the simulator.
    @Test func anAcceptedPushIsTraceableToApplesConsole() async throws {
        try await SimulatorDeliveryTests.Harness.with { h in
            let api = h.api
            let customerId = uniqueID("c")
            let customer = try await api.key(.customer, customerId)
            let phone = uniqueID("d")
            let starter = pushToken("trace-start-\(phone)")
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/\(customerId)/push-to-start-tokens/\(phone)", key: customer,
                    json: "{\"pushToken\":\"\(starter)\",\"environment\":\"production\"}"
                ).status == 204)
            let id = uniqueID("v")
            try await api.schedule(id, customer: customerId)
            try await h.drain(until: starter)
            let tablet = uniqueID("d")
            let token = pushToken("trace-la-\(id)")
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-1", key: customer,
                    json: "{\"pushToken\":\"\(token)\",\"environment\":\"sandbox\",\"deviceId\":\"\(tablet)\",\"version\":1}"
                ).status == 204)
            #expect(try await api.post(id, #"{"type":"enRoute"}"#).status == 201)
            try await h.drain(until: token)

            let start = try #require(h.delivered(to: starter).first { $0.accepted })
            let update = try #require(h.delivered(to: token).first { $0.accepted })
            #expect(start.uniqueID == nil, "production answers no apns-unique-id")
            let uniqueID = try #require(update.uniqueID, "the sandbox host answers one")
            var answer = try await api.call("GET", "/v1/visits/\(id)/deliveries", key: api.ops)
            try await eventually("both deliveries recorded as sent", within: 30) {
                answer = try await api.call("GET", "/v1/visits/\(id)/deliveries", key: api.ops)
                return deliveries(answer).filter { $0["state"] as? String == "sent" }.count >= 2
            }
            #expect(!answer.text.lowercased().contains(token) && !answer.text.lowercased().contains(starter))
            let list = deliveries(answer)
            let sentStart = try #require(list.first { $0["kind"] as? String == "start" })
            #expect(sentStart["target"] as? String == "pushToStart")
            #expect(sentStart["deviceId"] as? String == phone)
            #expect(sentStart["activityId"] is NSNull && sentStart["channelId"] is NSNull)
            #expect(sentStart["apnsId"] as? String == start.header("apns-id")?.lowercased())
            #expect(sentStart["apnsUniqueId"] is NSNull)
            let sentUpdate = try #require(list.first { $0["apnsId"] as? String == update.header("apns-id")?.lowercased() })
            #expect(sentUpdate["state"] as? String == "sent")
            #expect(sentUpdate["target"] as? String == "activity")
            #expect(sentUpdate["activityId"] as? String == "a-1")
            #expect(sentUpdate["deviceId"] is NSNull && sentUpdate["channelId"] is NSNull)
            #expect(sentUpdate["apnsUniqueId"] as? String == uniqueID)
        }
    }

    /// A broadcast names its channel: the id the push went to, kept after the server forgets the channel.
    @Test func aBroadcastNamesItsChannel() async throws {
        try await ChannelRouteTests.Harness.with { h in
            let api = h.api
            let id = uniqueID("v")
            let customerId = uniqueID("c")
            #expect(try await api.schedule(id, customer: customerId).status == 201)
            let customer = try await api.key(.customer, customerId)
            let channel = try #require(
                ChannelRouteTests.channelId(
                    try await api.call("PUT", "/v1/visits/\(id)/channel", key: customer, json: #"{"environment":"sandbox"}"#)))
            #expect(try await api.post(id, #"{"type":"enRoute"}"#).status == 201)
            try await h.drain("the broadcast") { h.broadcasts(to: channel).contains { $0.accepted } }
            let broadcast = try #require(h.broadcasts(to: channel).first { $0.accepted })
            _ = try await api.pool.withConnection { try $0.query("DELETE FROM channels WHERE channel_id = \(channel)") }

            let list = deliveries(try await api.call("GET", "/v1/visits/\(id)/deliveries", key: api.dispatcher))
            let sent = try #require(list.first { $0["target"] as? String == "channel" })
            #expect(sent["state"] as? String == "sent")
            #expect(sent["channelId"] as? String == channel)
            #expect(sent["activityId"] is NSNull && sent["deviceId"] is NSNull)
            #expect(sent["apnsId"] as? String == broadcast.header("apns-id")?.lowercased())
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
