import APNsSimulator
import Foundation
import JSON
import TestSupport
import Testing

/// A visit's language: `locale` at booking (a BCP 47 tag), kept and shown with the visit, and the texts its
/// pushes carry, through HTTP, the outbox worker, the APNs client and the simulator, with the shipped rules
/// (English, and Simplified Chinese under `zh-Hans` and `zh`).
@Suite(.serialized, .timeLimit(.minutes(5))) struct VisitLocaleTests {
    static func visitJSON(_ visitId: String, customer: String = "c-1", locale: String) -> String {
        let body = APIServer.visitJSON(visitId, customer: customer)
        return String(body.dropLast()) + ",\"locale\":\(locale)}"
    }

    @Test func aMalformedLocaleIsRefusedNamingTheField() async throws {
        try await withAPIServer { api in
            for bad in [
                #""zh_Hans""#, #""""#, #""english!""#, #""zh-""#, #""a-DE""#, #""toolonglang""#, #""en--GB""#,
                #""x""#, #""en-a""#, #""中文""#,
            ] {
                let id = uniqueID("bad-locale")
                let answer = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: Self.visitJSON(id, locale: bad))
                #expect(answer.status == 422, "\(bad)")
                let error = answer.json?["error"] as? [String: Any]
                #expect(error?["code"] as? String == "invalid_locale", "\(bad)")
                #expect(error?["field"] as? String == "locale", "\(bad)")
                #expect(try await api.eventCount(id) == 0)
            }
            let typed = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher, json: Self.visitJSON(uniqueID("v"), locale: "42"))
            #expect(typed.status == 422)
            for good in ["zh-Hans-CN", "es", "en-GB", "sr-Latn-RS", "de-CH-1996", "zh-Hant-TW", "x-whatever", "i-klingon"] {
                let answer = try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher, json: Self.visitJSON(uniqueID("v"), locale: "\"\(good)\""))
                #expect(answer.status == 201, "\(good)")
            }
        }
    }

    @Test func theLocaleIsKeptShownAndSurvivesAReplay() async throws {
        try await withAPIServer { api in
            let id = uniqueID("loc")
            let booked = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher, json: Self.visitJSON(id, locale: #""zh-Hans-CN""#))
            #expect(booked.status == 201)
            #expect(booked.json?["locale"] as? String == "zh-Hans-CN")
            #expect(try await api.post(id, #"{"type":"enRoute","kilometresAway":7}"#).status == 201)
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher).json?["locale"] as? String == "zh-Hans-CN")
            let events = try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher)
            let first = (events.json?["events"] as? [[String: Any]])?.first?["data"] as? [String: Any]
            #expect(first?["locale"] as? String == "zh-Hans-CN")

            let plain = uniqueID("loc-none")
            #expect(try await api.schedule(plain).status == 201)
            #expect(try await api.call("GET", "/v1/visits/\(plain)", key: api.dispatcher).json?.keys.contains("locale") == false)

            #expect(try await api.call("POST", "/v1/ops/projections/visits/rebuild", key: api.ops).status == 200)
            let replayed = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
            #expect(replayed.json?["locale"] as? String == "zh-Hans-CN")
            #expect(replayed.json?["status"] as? String == "enRoute")
        }
    }

    /// Books a visit in `locale` with a Live Activity and a device that gets fallback notifications, posts
    /// `nearby`, and answers the alert the activity got and the notification the device got.
    static func nearbyAlerts(locale: String) async throws -> (alert: JSONValue?, fallback: JSONValue?) {
        try await SimulatorDeliveryTests.Harness.with { harness in
            let api = harness.api
            let customerId = uniqueID("c")
            let customer = try await api.key(.customer, customerId)
            let notified = pushToken("loc-fb-\(locale)")
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/\(customerId)/devices/d-1/notification-token", key: customer,
                    json: "{\"pushToken\":\"\(notified)\",\"environment\":\"sandbox\"}"
                ).status == 204)
            let id = uniqueID("loc")
            #expect(
                try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher,
                    json: visitJSON(id, customer: customerId, locale: "\"\(locale)\"")
                ).status == 201)
            let activity = pushToken("loc-la-\(locale)")
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-1", key: customer,
                    json: "{\"pushToken\":\"\(activity)\",\"environment\":\"sandbox\",\"deviceId\":\"d-2\"}"
                ).status == 204)
            try await harness.drain(until: activity)
            try await harness.drain(until: notified)
            #expect(try await api.post(id, #"{"type":"nearby","kilometresAway":1}"#).status == 201)
            try await eventually("the nearby alert and notification", pollingEvery: 0.025) {
                _ = try await harness.worker.runOnce()
                return harness.delivered(to: activity).count >= 2 && harness.delivered(to: notified).count >= 2
            }
            let alert = harness.delivered(to: activity).last?.json?["aps"]?["alert"]
            let fallback = harness.delivered(to: notified).last?.json?["aps"]?["alert"]
            return (alert, fallback)
        }
    }

    @Test func aChineseVisitsNearbyAlertArrivesInChinese() async throws {
        let (alert, fallback) = try await Self.nearbyAlerts(locale: "zh-Hans-CN")
        #expect(alert?["title"]?.stringValue == "上门服务")
        #expect(alert?["body"]?.stringValue == "技师几分钟后就到。")
        #expect(alert?["sound"]?.stringValue == "default")
        #expect(fallback?["body"]?.stringValue == "技师几分钟后就到。")
    }

    @Test func aLanguageTheRulesDoNotHaveFallsBackToEnglish() async throws {
        let (alert, fallback) = try await Self.nearbyAlerts(locale: "es")
        #expect(alert?["title"]?.stringValue == "Service visit")
        #expect(alert?["body"]?.stringValue == "Your technician is a few minutes away.")
        #expect(fallback?["body"]?.stringValue == "Your technician is a few minutes away.")
    }
}
