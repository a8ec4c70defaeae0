import Foundation
import Testing

/// `Idempotency-Key` on POST /v1/visits and POST /v1/visits/{id}/events (contract §6).
@Suite struct IdempotencyTests {
    @Test func sameKeySameBodyReturnsTheFirstAnswer() async throws {
        let api = try await APIServer.start()
        defer { Task { await api.stop() } }
        let id = uniqueID("v")
        let key = [("Idempotency-Key", "k-\(id)")]
        let schedule = APIServer.visitJSON(id)
        let first = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: schedule, headers: key)
        #expect(first.status == 201)
        let event = #"{"type":"nearby","kilometresAway":1.5}"#
        let posted = try await api.post(id, event, headers: [("Idempotency-Key", "e-\(id)")])
        #expect(posted.status == 201)
        // Equal JSON, other spelling: still the same request.
        let retried = try await api.post(id, #"{ "kilometresAway": 1.5, "type": "nearby" }"#, headers: [("Idempotency-Key", "e-\(id)")])
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

    @Test func aFirstRefusalIsKeptToo() async throws {
        let api = try await APIServer.start()
        defer { Task { await api.stop() } }
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

    @Test func keysAreScopedToTheCallingKeyAndRoute() async throws {
        let api = try await APIServer.start()
        defer { Task { await api.stop() } }
        let id = uniqueID("v")
        try await api.schedule(id, technician: "t-1")
        let technician = try await api.key(.technician, "t-1")
        let header = [("Idempotency-Key", "shared")]
        #expect(try await api.post(id, #"{"type":"enRoute"}"#, headers: header).status == 201)
        // The same key string from another API key is another request.
        #expect(try await api.post(id, #"{"type":"nearby"}"#, key: technician, headers: header).status == 201)
        #expect(try await api.eventCount(id) == 3)
        #expect(try await api.post(id, #"{"type":"onSite"}"#, headers: [("Idempotency-Key", "")]).status == 400)
        #expect(try await api.post(id, #"{"type":"onSite"}"#, headers: [("Idempotency-Key", String(repeating: "k", count: 300))]).status == 400)
    }

    @Test func concurrentRetriesAppendOnce() async throws {
        let api = try await APIServer.start()
        defer { Task { await api.stop() } }
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
        #expect(answers.allSatisfy { $0.status == 201 || ($0.status == 409 && $0.errorCode == "idempotency_key_in_use") },
                "\(answers.map { "\($0.status) \($0.text)" })")
        #expect(try await api.eventCount(id) == 2)
        // Once settled, a retry gets the 201.
        let late = try await api.post(id, #"{"type":"progress","kilometresAway":4}"#, headers: header)
        #expect(late.status == 201)
        #expect(late.text == created.first?.text)
    }

    @Test func concurrentSchedulesWithOneKeyMakeOneVisit() async throws {
        let api = try await APIServer.start()
        defer { Task { await api.stop() } }
        let id = uniqueID("v")
        let header = [("Idempotency-Key", "sched-\(id)")]
        let answers = try await withThrowingTaskGroup(of: RawResponse.self) { group in
            let body = APIServer.visitJSON(id)
            for _ in 0..<8 { group.addTask { try await api.call("POST", "/v1/visits", key: api.dispatcher, json: body, headers: header) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.contains { $0.status == 201 })
        #expect(answers.allSatisfy { $0.status == 201 || $0.errorCode == "idempotency_key_in_use" })
        #expect(try await api.eventCount(id) == 1)
    }
}
