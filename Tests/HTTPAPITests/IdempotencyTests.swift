import Foundation
import Postgres
import Testing

/// `Idempotency-Key` on POST /v1/visits and POST /v1/visits/{id}/events (contract §6).
@Suite(.timeLimit(.minutes(5))) struct IdempotencyTests {
    @Test func sameKeySameBodyReturnsTheFirstAnswer() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let key = [("Idempotency-Key", "k-\(id)")]
            let schedule = APIServer.visitJSON(id)
            let first = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: schedule, headers: key)
            #expect(first.status == 201)
            let event = #"{"type":"nearby","kilometresAway":1.5}"#
            let posted = try await api.post(id, event, headers: [("Idempotency-Key", "e-\(id)")])
            #expect(posted.status == 201)
            // Equal JSON, other spelling: still the same request.
            let retried = try await api.post(
                id, #"{ "kilometresAway": 1.5, "type": "nearby" }"#, headers: [("Idempotency-Key", "e-\(id)")])
            #expect(retried.status == 201)
            #expect(retried.text == posted.text)
            #expect(retried.header("ETag") == posted.header("ETag"))
            #expect(try await api.eventCount(id) == 2)
            // Another body under the same key: 409, nothing appended.
            let other = try await api.post(id, #"{"type":"onSite"}"#, headers: [("Idempotency-Key", "e-\(id)")])
            #expect(other.status == 409)
            #expect(other.errorCode == "idempotency_key_reused")
            #expect(try await api.eventCount(id) == 2)
            // The schedule's retry answers its first 201 even though the visit has moved on.
            let rescheduled = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: schedule, headers: key)
            #expect(rescheduled.status == 201)
            #expect(rescheduled.text == first.text)
        }
    }

    /// A keyed command goes through group commit like an unkeyed one, and the answer it stores (composed in
    /// SQL from the read-model row its own transaction wrote) is the visit exactly as GET reads it.
    @Test func aKeyedCommandIsGroupCommittedAndStoresTheAnswerItGives() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let batches = api.environment.batcher.batchesRun
            let scheduled = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher, json: APIServer.visitJSON(id, customer: "c-3"),
                headers: [("Idempotency-Key", "s-\(id)")])
            #expect(scheduled.status == 201)
            #expect(api.environment.batcher.batchesRun == batches + 1, "the keyed schedule ran in a group-commit batch")
            let customer = try await api.key(.customer, "c-3")
            let registration = "{\"pushToken\":\"\(pushToken("keyed"))\",\"environment\":\"sandbox\"}"
            #expect(
                try await api.call("PUT", "/v1/visits/\(id)/live-activities/a-1", key: customer, json: registration).status == 204
            )

            let posted = try await api.post(
                id, #"{"type":"enRoute","kilometresAway":7.5}"#, headers: [("Idempotency-Key", "e-\(id)")])
            #expect(posted.status == 201)
            #expect(api.environment.batcher.batchesRun == batches + 2, "the keyed event ran in a group-commit batch")
            let read = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
            #expect(posted.text == read.text)
            #expect(posted.json?["liveActivities"] as? Int == 1)
            #expect(posted.header("ETag") == read.header("ETag"))
            #expect(posted.header("ETag") == "\"2\"")
            let stored = try await api.pool.withConnection { c in
                try c.query(
                    "SELECT status, response_body, response_etag FROM http_idempotency WHERE idempotency_key = \("e-\(id)")"
                )
                .first
            }
            #expect(stored?["status"] == "201")
            #expect(try await api.opened(stored?["response_body"] ?? "") == posted.text)
            #expect(stored?["response_body"]?.contains("12 Elm Row") == false, "stored sealed")
            #expect(stored?["response_etag"] == posted.header("ETag"))

            // Its retry finds the key taken and answers the stored answer; nothing more is appended.
            let retried = try await api.post(
                id, #"{"type":"enRoute","kilometresAway":7.5}"#, headers: [("Idempotency-Key", "e-\(id)")])
            #expect(retried.status == 201)
            #expect(retried.text == posted.text)
            #expect(try await api.eventCount(id) == 2)
        }
    }

    @Test func aFirstRefusalIsKeptToo() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id)
            let header = [("Idempotency-Key", "bad-\(id)")]
            let refused = try await api.post(id, #"{"type":"completed"}"#, headers: header)
            #expect(refused.status == 409)
            #expect(refused.errorCode == "illegal_transition")
            try await api.post(id, #"{"type":"onSite"}"#)
            // Now legal, but the key's first answer stands.
            let again = try await api.post(id, #"{"type":"completed"}"#, headers: header)
            #expect(again.status == 409)
            #expect(again.text == refused.text)
            #expect(try await api.eventCount(id) == 2)
        }
    }

    /// Refusals raised while the request is checked (role, path, headers, body), before any write, are
    /// the key's first answer like any other: a corrected body under the same key is another request (409).
    @Test func aRefusalBeforeTheWriteIsKeptToo() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, technician: "t-1")

            // 422 body, then the corrected body under the same key: refused, nothing appended.
            let bad = [("Idempotency-Key", "body-\(id)")]
            let refused = try await api.post(id, #"{"type":"teleported"}"#, headers: bad)
            #expect(refused.status == 422)
            let corrected = try await api.post(id, #"{"type":"enRoute"}"#, headers: bad)
            #expect(corrected.status == 409)
            #expect(corrected.errorCode == "idempotency_key_reused")
            #expect(try await api.eventCount(id) == 1)
            // The same refused body again: the first answer, word for word.
            let repeated = try await api.post(id, #"{ "type": "teleported" }"#, headers: bad)
            #expect(repeated.status == 422)
            #expect(repeated.text == refused.text)

            // 400 If-Match: the same body with a good If-Match still gets the stored 400.
            let pinned = [("Idempotency-Key", "pin-\(id)")]
            #expect(try await api.post(id, #"{"type":"enRoute"}"#, headers: pinned + [("If-Match", "\"abc\"")]).status == 400)
            #expect(try await api.post(id, #"{"type":"enRoute"}"#, headers: pinned + [("If-Match", "\"1\"")]).status == 400)
            #expect(try await api.eventCount(id) == 1)

            // 403: a technician posting the dispatcher's event, then a technician's event under that key.
            let technician = try await api.key(.technician, "t-1")
            let role = [("Idempotency-Key", "role-\(id)")]
            #expect(try await api.post(id, #"{"type":"cancelled","reason":"x"}"#, key: technician, headers: role).status == 403)
            let other = try await api.post(id, #"{"type":"enRoute"}"#, key: technician, headers: role)
            #expect(other.errorCode == "idempotency_key_reused")

            // 404 path id: kept under its route.
            let path = [("Idempotency-Key", "path-\(id)")]
            #expect(
                try await api.call(
                    "POST", "/v1/visits/no%20such/events", key: api.dispatcher, json: #"{"type":"enRoute"}"#,
                    headers: path
                ).status == 404)
            #expect(
                try await api.call(
                    "POST", "/v1/visits/no%20such/events", key: api.dispatcher, json: #"{"type":"nearby"}"#,
                    headers: path
                ).errorCode == "idempotency_key_reused")

            // 403 wrong role and 422 body on POST /v1/visits: no visit is made by the corrected retry.
            let customer = try await api.key(.customer, "c-1")
            let schedule = [("Idempotency-Key", "sched-\(id)")]
            #expect(
                try await api.call("POST", "/v1/visits", key: customer, json: APIServer.visitJSON("\(id)-c"), headers: schedule)
                    .status == 403)
            #expect(
                try await api.call("POST", "/v1/visits", key: customer, json: APIServer.visitJSON("\(id)-d"), headers: schedule)
                    .errorCode
                    == "idempotency_key_reused")
            #expect(
                try await api.call("POST", "/v1/visits", key: api.dispatcher, json: #"{"customerId":"c-1"}"#, headers: schedule)
                    .status == 422)
            let scheduled = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher, json: APIServer.visitJSON("\(id)-e"), headers: schedule)
            #expect(scheduled.errorCode == "idempotency_key_reused")
            #expect(try await api.eventCount("\(id)-e") == 0)

            // A body that is not JSON (with a raw NUL, which no text parameter carries) is kept as text.
            let raw = [("Idempotency-Key", "raw-\(id)")]
            let broken = try await api.post(id, "{\u{0}}", headers: raw)
            #expect(broken.status == 400)
            #expect(try await api.post(id, "{\u{0}}", headers: raw).text == broken.text)
            #expect(try await api.post(id, "{\u{0}\u{0}}", headers: raw).errorCode == "idempotency_key_reused")
        }
    }

    /// The token and preference routes keep their refusals the same way.
    @Test func aDeviceRouteRefusalIsKept() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, customer: "c-1")
            let customer = try await api.key(.customer, "c-1")
            let path = "/v1/visits/\(id)/live-activities/a-1"
            let header = [("Idempotency-Key", "token-\(id)")]
            let moon = "{\"pushToken\":\"\(pushToken("a"))\",\"environment\":\"moon\"}"
            let refused = try await api.call("PUT", path, key: customer, json: moon, headers: header)
            #expect(refused.status == 422)
            let good = "{\"pushToken\":\"\(pushToken("a"))\",\"environment\":\"sandbox\"}"
            #expect(
                try await api.call("PUT", path, key: customer, json: good, headers: header).errorCode == "idempotency_key_reused")
            #expect(try await api.call("GET", "/v1/visits/\(id)", key: customer).json?["liveActivities"] as? Int == 0)

            let preferences = "/v1/customers/c-1/devices/d-1/preferences"
            let keyed = [("Idempotency-Key", "prefs-\(id)")]
            #expect(
                try await api.call("PUT", preferences, key: customer, json: #"{"liveActivitiesEnabled":true}"#, headers: keyed)
                    .status
                    == 422)
            #expect(
                try await api.call(
                    "PUT", preferences, key: customer, json: #"{"liveActivitiesEnabled":true,"frequentPushesEnabled":true}"#,
                    headers: keyed
                ).errorCode == "idempotency_key_reused")
        }
    }

    /// What is not kept: a 401 (no calling key to scope it to), a malformed key (400), and anything
    /// without a key, which adds no statement at all.
    @Test func whatIsNotKept() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id)
            let header = [("Idempotency-Key", "anon-\(id)")]
            #expect(try await api.post(id, #"{"type":"enRoute"}"#, key: "lv_nokey_nosecret", headers: header).status == 401)
            #expect(try await api.post(id, #"{"type":"teleported"}"#).status == 422)
            #expect(try await api.post(id, #"{"type":"enRoute"}"#, headers: [("Idempotency-Key", "bad key")]).status == 400)
            #expect(try await storedAnswers(api) == 0)
            #expect(try await api.post(id, #"{"type":"enRoute"}"#, headers: header).status == 201)
            #expect(try await storedAnswers(api) == 1)
        }
    }

    func storedAnswers(_ api: APIServer) async throws -> Int {
        try await api.pool.withConnection { c in try c.query("SELECT count(*)::int AS n FROM http_idempotency").first!.int("n") }
    }

    @Test func keysAreScopedToTheCallingKeyAndRoute() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id, technician: "t-1")
            let technician = try await api.key(.technician, "t-1")
            let header = [("Idempotency-Key", "shared")]
            #expect(try await api.post(id, #"{"type":"enRoute"}"#, headers: header).status == 201)
            // The same key string from another API key is another request.
            #expect(try await api.post(id, #"{"type":"nearby"}"#, key: technician, headers: header).status == 201)
            #expect(try await api.eventCount(id) == 3)
            #expect(try await api.post(id, #"{"type":"onSite"}"#, headers: [("Idempotency-Key", "")]).status == 400)
            #expect(
                try await api.post(id, #"{"type":"onSite"}"#, headers: [("Idempotency-Key", String(repeating: "k", count: 300))])
                    .status == 400)
        }
    }

    @Test func concurrentRetriesAppendOnce() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id)
            let header = [("Idempotency-Key", "race-\(id)")]
            let answers = try await withThrowingTaskGroup(of: RawResponse.self) { group in
                for _ in 0..<12 {
                    group.addTask { try await api.post(id, #"{"type":"progress","kilometresAway":4}"#, headers: header) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let created = answers.filter { $0.status == 201 }
            // Every answer is the first one or "still being processed" (409); never a second event.
            #expect(!created.isEmpty)
            #expect(Set(created.map(\.text)).count == 1)
            #expect(
                answers.allSatisfy { $0.status == 201 || ($0.status == 409 && $0.errorCode == "idempotency_key_in_use") },
                "\(answers.map { "\($0.status) \($0.text)" })")
            #expect(try await api.eventCount(id) == 2)
            // Once settled, a retry gets the 201.
            let late = try await api.post(id, #"{"type":"progress","kilometresAway":4}"#, headers: header)
            #expect(late.status == 201)
            #expect(late.text == created.first?.text)
        }
    }

    @Test func concurrentSchedulesWithOneKeyMakeOneVisit() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let header = [("Idempotency-Key", "sched-\(id)")]
            let answers = try await withThrowingTaskGroup(of: RawResponse.self) { group in
                let body = APIServer.visitJSON(id)
                for _ in 0..<8 {
                    group.addTask { try await api.call("POST", "/v1/visits", key: api.dispatcher, json: body, headers: header) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.contains { $0.status == 201 })
            #expect(answers.allSatisfy { $0.status == 201 || $0.errorCode == "idempotency_key_in_use" })
            #expect(try await api.eventCount(id) == 1)
        }
    }
}
