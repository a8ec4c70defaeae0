import Foundation
import Postgres
import Runtime
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Live Activity and push-to-start token routes: catch-up pushes, late starts, counts, forgetting,
/// and secrets kept out of bodies and logs. Pushes are observed where the API puts them: the outbox.
@Suite(.serialized, .timeLimit(.minutes(5))) struct TokenRegistrationTests {
    struct Delivery: Equatable {
        let kind: String
        let activityId: String?
        let deviceId: String?
    }

    func deliveries(_ api: APIServer, visit: String) async throws -> [Delivery] {
        try await api.pool.withConnection { c in
            try c.query("SELECT kind, activity_id, device_id FROM deliveries WHERE visit_id = \(visit) ORDER BY id").map {
                Delivery(kind: try $0.string("kind"), activityId: $0["activity_id"], deviceId: $0["device_id"])
            }
        }
    }

    func register(_ api: APIServer, _ visit: String, _ activity: String, key: String, version: Int?, token: String) async throws
        -> RawResponse
    {
        let v = version.map { ",\"version\":\($0)" } ?? ""
        return try await api.call(
            "PUT", "/v1/visits/\(visit)/live-activities/\(activity)", key: key,
            json: "{\"pushToken\":\"\(token)\",\"environment\":\"sandbox\"\(v)}")
    }

    @Test func registrationBehindOrSilentCatchesUpAndEqualDoesNot() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, customer: "c-1")
            try await api.post(id, #"{"type":"enRoute"}"#)
            let customer = try await api.key(.customer, "c-1")

            #expect(try await register(api, id, "a-old", key: customer, version: 1, token: pushToken("old")).status == 204)
            #expect(try await register(api, id, "a-none", key: customer, version: nil, token: pushToken("none")).status == 204)
            #expect(try await register(api, id, "a-same", key: customer, version: 2, token: pushToken("same")).status == 204)
            let pushed = try await deliveries(api, visit: id)
            #expect(pushed.filter { $0.activityId == "a-old" } == [Delivery(kind: "update", activityId: "a-old", deviceId: nil)])
            #expect(pushed.filter { $0.activityId == "a-none" }.map(\.kind) == ["update"])
            #expect(pushed.filter { $0.activityId == "a-same" }.isEmpty)

            let read = try await api.call("GET", "/v1/visits/\(id)", key: customer)
            #expect(read.json?["liveActivities"] as? Int == 3)
            #expect(try await api.call("DELETE", "/v1/visits/\(id)/live-activities/a-same", key: customer).status == 204)
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: customer).json?["liveActivities"] as? Int == 2)
            // Rotating a token keeps the count.
            #expect(try await register(api, id, "a-old", key: customer, version: 2, token: pushToken("rotated")).status == 204)
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: customer).json?["liveActivities"] as? Int == 2)
        }
    }

    /// A Live Activity registered through this process after the visit's commands found it had no push target:
    /// the next event goes with its push to it at once (what was known of the visit's targets is dropped), not
    /// after its batch's targets probe found the activity and the batch went again.
    @Test func anActivityRegisteredHereGetsTheNextEventWithoutTheBatchGoingAgain() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let customerId = uniqueID("c")
            try await api.schedule(id, customer: customerId)
            try await api.post(id, #"{"type":"enRoute"}"#)
            let customer = try await api.key(.customer, customerId)
            #expect(try await register(api, id, "a-1", key: customer, version: 2, token: pushToken("here")).status == 204)
            let appeared = api.environment.metrics.value("livevisits_command_batch_targets_appeared_total") ?? 0
            try await api.post(id, #"{"type":"nearby"}"#)
            #expect(try await deliveries(api, visit: id).filter { $0.activityId == "a-1" }.map(\.kind) == ["update"])
            #expect((api.environment.metrics.value("livevisits_command_batch_targets_appeared_total") ?? 0) == appeared)
        }
    }

    @Test func catchUpOnAnEndedVisitIsTheEnd() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, customer: "c-1")
            try await api.post(id, #"{"type":"cancelled","reason":"rain"}"#)
            let customer = try await api.key(.customer, "c-1")
            #expect(try await register(api, id, "a-1", key: customer, version: 1, token: pushToken("end")).status == 204)
            #expect(try await deliveries(api, visit: id).filter { $0.activityId == "a-1" }.map(\.kind) == ["end"])
        }
    }

    @Test func pushToStartAfterSchedulingGetsTheStart() async throws {
        try await withAPIServer { api in
            let quiet = uniqueID("v")
            let followed = uniqueID("v")
            let ended = uniqueID("v")
            try await api.schedule(quiet, customer: "c-5")
            try await api.schedule(followed, customer: "c-5")
            try await api.schedule(ended, customer: "c-5")
            try await api.post(ended, #"{"type":"cancelled","reason":"x"}"#)
            let customer = try await api.key(.customer, "c-5")
            #expect(try await register(api, followed, "a-1", key: customer, version: 1, token: pushToken("f")).status == 204)

            let body = "{\"pushToken\":\"\(pushToken("start"))\",\"environment\":\"production\"}"
            #expect(
                try await api.call("PUT", "/v1/customers/c-5/push-to-start-tokens/d-1", key: customer, json: body).status == 204)
            #expect(try await deliveries(api, visit: quiet).filter { $0.kind == "start" }.map(\.deviceId) == ["d-1"])
            #expect(try await deliveries(api, visit: followed).filter { $0.kind == "start" }.isEmpty)
            #expect(try await deliveries(api, visit: ended).filter { $0.kind == "start" }.isEmpty)
            #expect(try await api.call("DELETE", "/v1/customers/c-5/push-to-start-tokens/d-1", key: customer).status == 204)
        }
    }

    /// `livevisits_events_appended_total` on the server's own /metrics.
    func eventsAppended(_ api: APIServer) async throws -> Double {
        let text = try await api.call("GET", "/metrics", key: nil).text
        let sample = text.split(separator: "\n").first { $0.hasPrefix("livevisits_events_appended_total ") }
        return sample.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
    }

    /// Token and preference writes append no event, so /metrics does not count one for them; visit
    /// events are counted once, a stored answer and a refusal not at all.
    @Test func onlyAppendedEventsAreCounted() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, customer: "c-1")
            try await api.post(id, #"{"type":"enRoute"}"#)
            #expect(try await eventsAppended(api) == 2)
            let keyed = [("Idempotency-Key", "m-\(id)")]
            #expect(try await api.post(id, #"{"type":"nearby"}"#, headers: keyed).status == 201)
            #expect(try await api.post(id, #"{"type":"nearby"}"#, headers: keyed).status == 201)
            #expect(try await api.post(id, #"{"type":"completed"}"#).status == 409)
            #expect(try await eventsAppended(api) == 3)

            let customer = try await api.key(.customer, "c-1")
            #expect(try await register(api, id, "a-1", key: customer, version: nil, token: pushToken("m1")).status == 204)
            #expect(try await register(api, id, "a-2", key: customer, version: 3, token: pushToken("m2")).status == 204)
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(id)/live-activities/a-3", key: customer,
                    json: "{\"pushToken\":\"\(pushToken("m3"))\",\"environment\":\"sandbox\"}", headers: keyed
                ).status == 204)
            #expect(try await api.call("DELETE", "/v1/visits/\(id)/live-activities/a-2", key: customer).status == 204)
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/c-1/devices/d-1/preferences", key: customer,
                    json: #"{"liveActivitiesEnabled":true,"frequentPushesEnabled":false}"#
                ).status == 204)
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/c-1/push-to-start-tokens/d-1", key: customer,
                    json: "{\"pushToken\":\"\(pushToken("m4"))\",\"environment\":\"sandbox\"}"
                ).status == 204)
            #expect(try await api.call("DELETE", "/v1/customers/c-1/push-to-start-tokens/d-1", key: customer).status == 204)
            #expect(try await eventsAppended(api) == 3)
            // The catch-up of the registration without a version was still enqueued.
            #expect(try await deliveries(api, visit: id).filter { $0.activityId == "a-1" }.map(\.kind) == ["update"])
        }
    }

    /// A start held for the arrival window (more than the 2 h lead time away) carries the current state
    /// when it finally goes: each event replaces the waiting start (new row, old one superseded), and the
    /// end cancels it.
    @Test func aWaitingStartIsReplacedByEachEventAndCancelledByTheEnd() async throws {
        try await withAPIServer { api in
            let customer = try await api.key(.customer, "c-9")
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/c-9/push-to-start-tokens/d-1", key: customer,
                    json: "{\"pushToken\":\"\(pushToken("waiting"))\",\"environment\":\"sandbox\"}"
                ).status == 204)
            let id = uniqueID("v")
            let now = Int(Date().timeIntervalSince1970)
            let visit = """
                {"visitId":"\(id)","customerId":"c-9",\
                "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},\
                "technician":{"id":"t-1","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
                "arrivalWindow":{"start":\(now + 5 * 3600),"end":\(now + 6 * 3600)},"kilometresAway":40.0}
                """
            #expect(try await api.call("POST", "/v1/visits", key: api.dispatcher, json: visit).status == 201)
            try await api.post(
                id,
                "{\"type\":\"enRoute\",\"kilometresAway\":30,\"arrivalWindow\":{\"start\":\(now + 4 * 3600),\"end\":\(now + 5 * 3600)}}"
            )

            struct Start: Equatable {
                let state: String
                let status: String?
                let due: Double
            }
            func starts() async throws -> [Start] {
                try await api.pool.withConnection { c in
                    try c.query(
                        """
                        SELECT state, body::json->'aps'->'content-state'->>'status' AS status, next_attempt_at
                        FROM deliveries WHERE visit_id = \(id) AND kind = 'start' ORDER BY id
                        """
                    ).map { Start(state: try $0.string("state"), status: $0["status"], due: try $0.double("next_attempt_at")) }
                }
            }
            let afterEnRoute = try await starts()
            #expect(afterEnRoute.map(\.state) == ["superseded", "pending"])
            #expect(afterEnRoute.map(\.status) == ["scheduled", "enRoute"])
            // Released 2 h before the window as it is now, not as it was booked.
            #expect(afterEnRoute.map { Int($0.due) } == [now + 3 * 3600, now + 2 * 3600])

            try await api.post(id, #"{"type":"cancelled","reason":"no access"}"#)
            #expect(try await starts().map(\.state) == ["superseded", "cancelled"])
        }
    }

    @Test func badTokenBodies() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, customer: "c-1")
            let customer = try await api.key(.customer, "c-1")
            let path = "/v1/visits/\(id)/live-activities/a-1"
            #expect(try await api.call("PUT", path, key: customer, json: "{").status == 400)
            #expect(try await api.call("PUT", path, key: customer, json: "[]").status == 422)
            #expect(try await api.call("PUT", path, key: customer, json: #"{"environment":"sandbox"}"#).status == 422)
            #expect(
                try await api.call("PUT", path, key: customer, json: #"{"pushToken":"zz-not-hex","environment":"sandbox"}"#)
                    .status
                    == 422)
            #expect(
                try await api.call(
                    "PUT", path, key: customer, json: "{\"pushToken\":\"\(pushToken("x"))\",\"environment\":\"moon\"}"
                )
                .status == 422)
            #expect(
                try await api.call(
                    "PUT", path, key: customer,
                    json: "{\"pushToken\":\"\(pushToken("x"))\",\"environment\":\"sandbox\",\"version\":-1}"
                ).status == 422)
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/nope/live-activities/a-1", key: customer,
                    json: "{\"pushToken\":\"\(pushToken("x"))\",\"environment\":\"sandbox\"}"
                ).status == 404)
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/c-1/devices/d-1/preferences", key: customer,
                    json: #"{"liveActivitiesEnabled":"yes","frequentPushesEnabled":true}"#
                ).status == 422)
        }
    }

    @Test func secretsAppearInNoBodyAndNoLogLine() async throws {
        // Every line an operator might read, whatever LIVEVISITS_LOG_LEVEL the test run has (a run with `warning`
        // wrote no request line to look in).
        let level = Logger.minimumLevel.withLock { level in
            defer { level = min(level, .info) }
            return level
        }
        defer { Logger.minimumLevel.withLock { $0 = level } }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("api-log-\(UUID().uuidString).txt")
        let saved = dup(2)
        let file = open(log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        dup2(file, 2)
        var bodies: [String] = []
        let updateToken = pushToken("secret-update-token-1")
        let startToken = pushToken("secret-start-token-2")
        var keys: [String] = []
        do {
            try await withAPIServer { api in
                let id = uniqueID("v")
                let customer = try await api.key(.customer, "c-1")
                keys = [api.dispatcher, api.ops, customer]
                bodies.append(try await api.schedule(id, customer: "c-1").text)
                let minted = try await api.call(
                    "POST", "/v1/keys", key: api.dispatcher, json: #"{"role":"customer","subject":"c-1"}"#)
                keys.append(minted.json?["key"] as? String ?? "")
                bodies.append(try await register(api, id, "a-1", key: customer, version: nil, token: updateToken).text)
                bodies.append(
                    try await api.call(
                        "PUT", "/v1/customers/c-1/push-to-start-tokens/d-1", key: customer,
                        json: "{\"pushToken\":\"\(startToken)\",\"environment\":\"sandbox\"}"
                    ).text)
                bodies.append(try await api.post(id, #"{"type":"nearby"}"#).text)
                bodies.append(try await api.call("GET", "/v1/visits/\(id)", key: customer).text)
                bodies.append(try await api.call("GET", "/v1/visits/\(id)/events", key: api.ops).text)
                bodies.append(try await api.call("GET", "/v1/visits", key: customer).text)
                bodies.append(try await api.call("GET", "/v1/ops/outbox", key: api.ops).text)
                bodies.append(try await api.call("GET", "/metrics", key: nil).text)
                // Wrong and revoked keys are not echoed either.
                bodies.append(try await api.call("GET", "/v1/visits", key: keys[3] + "0").text)
            }
        } catch {
            dup2(saved, 2)
            throw error
        }
        fsync(2)
        dup2(saved, 2)
        close(file)
        close(saved)
        let logged = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: log)
        #expect(logged.contains("/v1/visits"), "the request log was captured")
        for secret in [updateToken, startToken] + keys.filter({ !$0.isEmpty }).map({ String($0.split(separator: "_").last!) }) {
            #expect(!logged.contains(secret))
            #expect(!bodies.contains { $0.contains(secret) })
        }
    }
}
