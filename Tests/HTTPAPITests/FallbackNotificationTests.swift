import APNs
import APNsSimulator
import Foundation
import Outbox
import Postgres
import Runtime
import TestSupport
import Testing

/// Contract §9: ordinary notifications to the customer's devices that follow a visit without a Live
/// Activity, through the HTTP API, the outbox worker, the APNs client and the simulator.
@Suite(.serialized, .timeLimit(.minutes(5))) struct FallbackNotificationTests {
    @Test func devicesWithoutALiveActivityGetAnAlertOnEachStatusWithAFallback() async throws {
        try await SimulatorDeliveryTests.Harness.with { harness in
            let api = harness.api
            let customerId = uniqueID("c")
            let customer = try await api.key(.customer, customerId)
            func register(_ device: String, _ token: String) async throws {
                let answer = try await api.call(
                    "PUT", "/v1/customers/\(customerId)/devices/\(device)/notification-token", key: customer,
                    json: "{\"pushToken\":\"\(token)\",\"environment\":\"sandbox\"}")
                #expect(answer.status == 204)
            }
            let off = pushToken("fb-off")
            let plain = pushToken("fb-plain")
            let starter = pushToken("fb-starter")
            let watching = pushToken("fb-watching")
            try await register("d-off", off)
            try await register("d-plain", plain)
            try await register("d-starter", starter)
            // Live Activities off on d-off (it would get a start otherwise); d-starter can be started by push.
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/\(customerId)/devices/d-off/preferences", key: customer,
                    json: #"{"liveActivitiesEnabled":false,"frequentPushesEnabled":false}"#
                ).status == 204)
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/\(customerId)/push-to-start-tokens/d-starter", key: customer,
                    json: "{\"pushToken\":\"\(pushToken("fb-starter-pts"))\",\"environment\":\"sandbox\"}"
                ).status == 204)

            let id = uniqueID("fb")
            #expect(try await api.schedule(id, customer: customerId).status == 201)
            try await harness.drain(until: off)
            // A device that follows the visit with a Live Activity registered with its device id gets none.
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-watching", key: customer,
                    json:
                        "{\"pushToken\":\"\(pushToken("fb-activity"))\",\"environment\":\"sandbox\",\"deviceId\":\"d-watching\"}"
                ).status == 204)
            try await register("d-watching", watching)

            for (event, notifies) in [
                (#"{"type":"enRoute","kilometresAway":7}"#, false), (#"{"type":"progress","kilometresAway":5}"#, false),
                (#"{"type":"nearby","kilometresAway":1}"#, true), (#"{"type":"onSite"}"#, true),
                (#"{"type":"progress","kilometresAway":0}"#, false), (#"{"type":"completed"}"#, true),
            ] {
                let before = harness.delivered(to: off).count
                #expect(try await api.post(id, event).status == 201)
                if notifies {
                    try await eventually("the fallback after \(event)", pollingEvery: 0.025) {
                        _ = try await harness.worker.runOnce()
                        return harness.delivered(to: off).count > before && harness.delivered(to: plain).count > before
                    }
                } else {
                    for _ in 0..<5 { _ = try await harness.worker.runOnce() }
                }
            }
            for _ in 0..<5 { _ = try await harness.worker.runOnce() }

            let statuses = ["scheduled", "nearby", "onSite", "completed"]
            for token in [off, plain] {
                let alerts = harness.delivered(to: token)
                #expect(alerts.map { $0.json?["status"]?.stringValue } == statuses)
                #expect(alerts.allSatisfy { $0.status == 200 })
            }
            #expect(harness.delivered(to: starter).isEmpty)
            #expect(harness.delivered(to: watching).isEmpty)

            let nearby = try #require(harness.delivered(to: off).dropFirst().first)
            #expect(nearby.header("apns-push-type") == "alert")
            #expect(nearby.header("apns-topic") == SimulatorDeliveryTests.bundleID)
            #expect(nearby.header("apns-priority") == "10")
            let expiration = try #require(nearby.header("apns-expiration").flatMap { Double($0) })
            #expect(abs(expiration - (nearby.receivedAt + 3600)) < 60)
            #expect(
                nearby.payload
                    == #"{"aps":{"alert":{"title":"Service visit","body":"Your technician is a few minutes away."},"#
                    + #""sound":"default","thread-id":"visit-\#(id)"},"visitId":"\#(id)","status":"nearby"}"#)
        }
    }

    @Test func aNotificationTokenIsTheCustomersOwnAndHex() async throws {
        try await withAPIServer { api in
            let customer = try await api.key(.customer, "c-1")
            let other = try await api.key(.customer, "c-2")
            let path = "/v1/customers/c-1/devices/d-1/notification-token"
            let good = "{\"pushToken\":\"\(pushToken("nt"))\",\"environment\":\"sandbox\"}"
            #expect(
                try await api.call("PUT", path, key: customer, json: #"{"pushToken":"xyz","environment":"sandbox"}"#).status
                    == 422)
            #expect(
                try await api.call("PUT", path, key: customer, json: "{\"pushToken\":\"abcd\",\"environment\":\"sandbox\"}")
                    .status
                    == 422)
            #expect(
                try await api.call(
                    "PUT", path, key: customer, json: "{\"pushToken\":\"\(pushToken("nt"))\",\"environment\":\"staging\"}"
                ).status == 422)
            #expect(try await api.call("PUT", path, key: other, json: good).status == 404)
            #expect(try await api.call("PUT", path, key: api.dispatcher, json: good).status == 403)
            let stored = try await api.pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM notification_tokens").first?.int("n")
            }
            #expect(stored == 0)
            #expect(try await api.call("PUT", path, key: customer, json: good).status == 204)
            #expect(try await api.call("DELETE", path, key: other).status == 404)
            #expect(try await api.call("DELETE", path, key: customer).status == 204)
            let live = try await api.pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM notification_tokens WHERE retired_at_ms IS NULL").first?.int("n")
            }
            #expect(live == 0)
        }
    }
}
