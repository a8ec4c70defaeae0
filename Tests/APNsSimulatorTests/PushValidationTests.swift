import APNsSimulator
import Foundation
import Testing

@Suite("Pushes over HTTP/2 + TLS, validated as APNs does", .timeLimit(.minutes(2)))
struct PushValidationTests {
    @Test("a correct update is accepted over HTTP/2 and recorded without the JWT")
    func acceptsUpdate() async throws {
        try await withSimulator { h in
            let id = "8a3f5c2e-1b4d-4e6f-9a7b-0c1d2e3f4a5b"
            let response = try await h.push(headers: ["apns-id": id, "apns-priority": "5"])
            #expect(response.status == 200, "\(response.curlError) \(response.body)")
            #expect(response.httpVersion == "2")
            #expect(response.headers["apns-id"] == id)
            #expect(response.body.isEmpty)

            let recorded = try #require(h.simulator.deliveries().last)
            #expect(recorded.status == 200)
            #expect(recorded.reason == nil)
            #expect(recorded.answered)
            #expect(recorded.deviceToken == SimulatorHarness.token())
            #expect(recorded.apnsID == id)
            #expect(recorded.header("apns-topic") == SimulatorHarness.topic)
            #expect(recorded.header("apns-priority") == "5")
            #expect(recorded.header("authorization") == nil)
            #expect(recorded.providerToken?.keyID == h.key.keyID)
            #expect(recorded.providerToken?.issuer == h.key.teamID)
            #expect(recorded.providerToken?.issuedAt != nil)
            #expect(recorded.aps?["event"]?.stringValue == "update")
            #expect(recorded.aps?["content-state"]?["kilometresAway"] == .number(1.2))
            #expect(!recorded.payload.contains(h.jwt))
        }
    }

    @Test("start and end payloads of the seed are accepted; a missing apns-id is generated")
    func acceptsStartAndEnd() async throws {
        try await withSimulator { h in
            let start = try await h.push(body: SimulatorHarness.startBody())
            #expect(start.status == 200, "\(start.body)")
            let end = try await h.push(body: SimulatorHarness.endBody())
            #expect(end.status == 200, "\(end.body)")
            let generated = try #require(end.headers["apns-id"])
            #expect(generated.count == 36)
            #expect(h.simulator.deliveries().map(\.status) == [200, 200])
        }
    }

    @Test("every validation error answers Apple's status and reason, and is recorded")
    func validationErrors() async throws {
        try await withSimulator { h in
            struct Case: Sendable {
                var name: String
                var token: String = SimulatorHarness.token()
                var body: String? = SimulatorHarness.updateBody()
                var headers: [String: String?] = [:]
                var method = "POST"
                var path: String?
                var status: Int
                var reason: String
            }
            let big = String(repeating: "x", count: 4200)
            let alertBody = #"{"aps":{"alert":{"title":"t","body":"b"},"sound":"default"},"visitId":"v-1"}"#
            let cases: [Case] = [
                Case(name: "GET", method: "GET", status: 405, reason: "MethodNotAllowed"),
                Case(name: "bad path", path: "/3/devices/abcd", status: 404, reason: "BadPath"),
                Case(name: "empty token", path: "/3/device/", status: 400, reason: "MissingDeviceToken"),
                Case(
                    name: "non-hex token", token: "zz" + String(repeating: "0", count: 62), status: 400, reason: "BadDeviceToken"),
                Case(name: "short token", token: "abcd", status: 400, reason: "BadDeviceToken"),
                Case(name: "no authorization", headers: ["authorization": nil], status: 403, reason: "MissingProviderToken"),
                Case(name: "basic auth", headers: ["authorization": "basic abc"], status: 403, reason: "InvalidProviderToken"),
                Case(
                    name: "garbage jwt", headers: ["authorization": "bearer a.b.c"], status: 403, reason: "InvalidProviderToken"),
                Case(name: "no topic", headers: ["apns-topic": nil], status: 400, reason: "MissingTopic"),
                Case(name: "plain topic", headers: ["apns-topic": SimulatorHarness.bundleID], status: 400, reason: "BadTopic"),
                Case(
                    name: "other app", headers: ["apns-topic": "com.other.app.push-type.liveactivity"], status: 400,
                    reason: "DeviceTokenNotForTopic"),
                // An ordinary notification's topic is the bare bundle id: the Live Activity topic is refused for it.
                Case(
                    name: "alert push type, Live Activity topic", headers: ["apns-push-type": "alert"], status: 400,
                    reason: "BadTopic"),
                Case(
                    name: "alert push type, other app", body: alertBody,
                    headers: ["apns-push-type": "alert", "apns-topic": "com.other.app"], status: 400,
                    reason: "DeviceTokenNotForTopic"),
                Case(
                    name: "alert push type, no alert", body: #"{"aps":{"sound":"default"}}"#,
                    headers: ["apns-push-type": "alert", "apns-topic": SimulatorHarness.bundleID], status: 400,
                    reason: "BadPayload"),
                Case(
                    name: "background push type", headers: ["apns-push-type": "background"], status: 400,
                    reason: "InvalidPushType"),
                Case(name: "no push type", headers: ["apns-push-type": nil], status: 400, reason: "InvalidPushType"),
                Case(name: "priority 7", headers: ["apns-priority": "7"], status: 400, reason: "BadPriority"),
                Case(name: "expiration text", headers: ["apns-expiration": "soon"], status: 400, reason: "BadExpirationDate"),
                Case(name: "bad apns-id", headers: ["apns-id": "not-a-uuid"], status: 400, reason: "BadMessageId"),
                Case(
                    name: "apns-id with a dash out of place", headers: ["apns-id": "1234567-89abc-def0-1234-56789abcdef01"],
                    status: 400,
                    reason: "BadMessageId"),
                Case(
                    name: "apns-id with a letter past f", headers: ["apns-id": "123e4567-e89b-12d3-a456-42661417400g"],
                    status: 400,
                    reason: "BadMessageId"),
                Case(name: "empty body", body: nil, status: 400, reason: "PayloadEmpty"),
                Case(
                    name: "too large",
                    body: "{\"aps\":{\"timestamp\":1,\"event\":\"update\",\"content-state\":{\"x\":\"\(big)\"}}}",
                    status: 413, reason: "PayloadTooLarge"),
                Case(name: "not JSON", body: "{\"aps\":", status: 400, reason: "BadPayload"),
                Case(name: "no aps", body: "{\"x\":1}", status: 400, reason: "BadPayload"),
                Case(
                    name: "unknown event",
                    body: SimulatorHarness.updateBody().replacingOccurrences(of: "\"update\"", with: "\"pause\""),
                    status: 400, reason: "BadPayload"),
                Case(
                    name: "string timestamp",
                    body: "{\"aps\":{\"timestamp\":\"1790000000\",\"event\":\"update\",\"content-state\":{}}}", status: 400,
                    reason: "BadPayload"),
                Case(
                    name: "boolean timestamp",
                    body: "{\"aps\":{\"timestamp\":true,\"event\":\"update\",\"content-state\":{}}}", status: 400,
                    reason: "BadPayload"),
                Case(
                    name: "duplicate key",
                    body: "{\"aps\":{\"timestamp\":1790000000,\"event\":\"update\",\"event\":\"end\",\"content-state\":{}}}",
                    status: 400, reason: "BadPayload"),
                Case(
                    name: "fractional timestamp",
                    body: "{\"aps\":{\"timestamp\":1790000000.5,\"event\":\"update\",\"content-state\":{}}}", status: 400,
                    reason: "BadPayload"),
                Case(
                    name: "content-state not an object",
                    body: "{\"aps\":{\"timestamp\":1790000000,\"event\":\"update\",\"content-state\":[]}}", status: 400,
                    reason: "BadPayload"),
                Case(
                    name: "start without alert", body: SimulatorHarness.startBody(alert: false), status: 400, reason: "BadPayload"
                ),
                Case(
                    name: "start without attributes-type",
                    body: SimulatorHarness.startBody().replacingOccurrences(
                        of: "\"attributes-type\":\"ServiceVisitAttributes\",", with: ""),
                    status: 400, reason: "BadPayload"),
                Case(
                    name: "stale-date text",
                    body: "{\"aps\":{\"timestamp\":1,\"event\":\"update\",\"content-state\":{},\"stale-date\":\"soon\"}}",
                    status: 400, reason: "BadPayload"),
            ]
            for c in cases {
                let response = try await h.push(token: c.token, body: c.body, headers: c.headers, method: c.method, path: c.path)
                #expect(response.status == c.status, "\(c.name): \(response.body) \(response.curlError)")
                #expect(response.reason == c.reason, "\(c.name): \(response.body)")
                #expect(response.headers["apns-id"] != nil, "\(c.name)")
            }
            let recorded = h.simulator.deliveries()
            #expect(recorded.count == cases.count)
            #expect(recorded.map(\.reason) == cases.map(\.reason))
            #expect(recorded.allSatisfy { $0.header("authorization") == nil && !$0.payload.contains(h.jwt) })
        }
    }

    @Test("an ordinary notification (alert push type, the bare bundle id as topic) is accepted")
    func acceptsAlert() async throws {
        try await withSimulator { h in
            let body = #"{"aps":{"alert":{"title":"Service visit","body":"Arrived."},"sound":"default"},"status":"onSite"}"#
            let response = try await h.push(
                body: body, headers: ["apns-push-type": "alert", "apns-topic": SimulatorHarness.bundleID, "apns-priority": "10"])
            #expect(response.status == 200, "\(response.body)")
            let recorded = try #require(h.simulator.deliveries().last)
            #expect(recorded.header("apns-push-type") == "alert")
            #expect(recorded.json?["status"]?.stringValue == "onSite")
        }
    }

    @Test("without a configured bundle id any Live Activity topic is accepted")
    func anyTopicWithoutBundle() async throws {
        try await withSimulator(bundleID: nil) { h in
            let response = try await h.push(headers: ["apns-topic": "com.other.app.push-type.liveactivity"])
            #expect(response.status == 200, "\(response.body)")
        }
    }
}
