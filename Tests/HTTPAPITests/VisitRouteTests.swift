import Foundation
import Testing

/// Each visit route's success path and each error code, through real HTTP on real PostgreSQL.
@Suite(.timeLimit(.minutes(5))) struct VisitRouteTests {
    @Test func scheduleReadPostAndHistory() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            let created = try await api.schedule(id, customer: "c-7", technician: "t-42")
            #expect(created.status == 201)
            #expect(created.header("ETag") == "\"1\"")
            #expect(created.json?["visitId"] as? String == id)
            #expect(created.json?["status"] as? String == "scheduled")
            #expect(created.json?["version"] as? Int == 1)
            #expect(created.json?["liveActivities"] as? Int == 0)
            #expect(created.json?["dismissal"] is NSNull)

            let nearby = try await api.post(id, #"{"type":"nearby","kilometresAway":1.2}"#)
            #expect(nearby.status == 201)
            #expect(nearby.header("ETag") == "\"2\"")
            #expect(nearby.json?["status"] as? String == "nearby")
            #expect(nearby.json?["relevanceScore"] as? Int == 100)
            let content = nearby.json?["contentState"] as? [String: Any]
            #expect(content?["kilometresAway"] as? Double == 1.2)
            #expect(content?["technicianName"] as? String == "Sam")

            let read = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
            #expect(read.status == 200)
            #expect(read.header("ETag") == "\"2\"")
            #expect(read.text == nearby.text)

            let history = try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher)
            #expect(history.status == 200)
            let events = history.json?["events"] as? [[String: Any]] ?? []
            #expect(events.map { $0["type"] as? String } == ["scheduled", "nearby"])
            #expect(events.map { $0["version"] as? Int } == [1, 2])
            #expect((events.last?["actor"] as? [String: Any])?["role"] as? String == "dispatcher")
            #expect(
                events.allSatisfy {
                    ($0["recordedAt"] as? Int ?? 0) > 1_700_000_000 && $0["position"] is Int && $0["data"] is [String: Any]
                })
        }
    }

    @Test func generatedIdAndEndedVisit() async throws {
        try await withAPIServer { api in
            let created = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: APIServer.visitJSON(nil))
            #expect(created.status == 201)
            let id = try #require(created.json?["visitId"] as? String)
            #expect(!id.isEmpty)
            #expect(try await api.post(id, #"{"type":"onSite"}"#).status == 201)
            let done = try await api.post(id, #"{"type":"completed"}"#)
            #expect(done.status == 201)
            #expect(done.json?["relevanceScore"] as? Int == 0)
            #expect((done.json?["dismissal"] as? [String: Any])?["policy"] as? String == "after")
            let again = try await api.post(id, #"{"type":"progress","kilometresAway":0}"#)
            #expect(again.status == 409)
            #expect(again.errorCode == "visit_ended")
            #expect(try await api.eventCount(id) == 3)
        }
    }

    @Test func cancelledAndFailedEnds() async throws {
        try await withAPIServer { api in
            let a = uniqueID("v")
            let b = uniqueID("v")
            try await api.schedule(a)
            try await api.schedule(b)
            let cancelled = try await api.post(a, #"{"type":"cancelled","reason":"customer away"}"#)
            #expect(cancelled.status == 201)
            #expect((cancelled.json?["dismissal"] as? [String: Any])?["policy"] as? String == "immediate")
            let failed = try await api.post(b, #"{"type":"failed","reason":"no parts"}"#)
            #expect(failed.status == 201)
            #expect((failed.json?["contentState"] as? [String: Any])?["vanDescription"] as? String == "no parts")
        }
    }

    @Test func everyErrorCodeHasTheContractShape() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id)
            let customer = try await api.key(.customer, "c-1")

            var answers: [(Int, RawResponse)] = []
            // 400: malformed JSON, malformed If-Match.
            answers.append((400, try await api.post(id, #"{"type": "nearby""#)))
            answers.append((400, try await api.post(id, #"{"type":"nearby"}"#, headers: [("If-Match", "\"abc\"")])))
            // 401: no key, unknown key, garbage scheme.
            answers.append((401, try await api.call("GET", "/v1/visits/\(id)", key: nil)))
            answers.append(
                (
                    401,
                    try await api.call("GET", "/v1/visits/\(id)", key: "lv_0000000000000000_" + String(repeating: "0", count: 48))
                ))
            answers.append(
                (401, try await api.call("GET", "/v1/visits/\(id)", key: nil, headers: [("Authorization", "Basic Zm9vOmJhcg==")]))
            )
            // 403: a customer posting an event, a customer scheduling.
            answers.append((403, try await api.post(id, #"{"type":"nearby"}"#, key: customer)))
            answers.append((403, try await api.schedule(uniqueID("v"), key: customer)))
            // 404: unknown visit (read, history, event).
            answers.append((404, try await api.call("GET", "/v1/visits/nope-\(id)", key: api.dispatcher)))
            answers.append((404, try await api.call("GET", "/v1/visits/nope-\(id)/events", key: api.dispatcher)))
            answers.append((404, try await api.post("nope-\(id)", #"{"type":"nearby"}"#)))
            // 409: illegal transition, scheduling twice, version conflict.
            answers.append((409, try await api.post(id, #"{"type":"completed"}"#)))
            answers.append((409, try await api.schedule(id)))
            answers.append((409, try await api.post(id, #"{"type":"enRoute"}"#, headers: [("If-Match", "\"7\"")])))
            // 413: a body over 64 KiB.
            let huge = "{\"type\":\"progress\",\"pad\":\"" + String(repeating: "x", count: 70_000) + "\"}"
            answers.append((413, try await api.post(id, huge)))
            // 422: unknown type, wrong type, push over 4 KB, bad list filter.
            answers.append((422, try await api.post(id, #"{"type":"teleported"}"#)))
            answers.append((422, try await api.post(id, #"{"type":"progress","kilometresAway":"far"}"#)))
            let longReason = String(repeating: "é", count: 3000)
            answers.append((422, try await api.post(id, "{\"type\":\"failed\",\"reason\":\"\(longReason)\"}")))
            answers.append((422, try await api.call("GET", "/v1/visits?status=sometimes", key: api.dispatcher)))

            for (expected, answer) in answers {
                #expect(answer.status == expected, "\(answer.status) \(answer.text)")
                let error = answer.json?["error"] as? [String: Any]
                #expect(error?["code"] is String && error?["message"] is String, "\(answer.text)")
            }
            #expect(answers.first { $0.0 == 409 && $0.1.errorCode == "illegal_transition" } != nil)
            #expect(try await api.eventCount(id) == 1)
            // A key never comes back in an error message.
            #expect(!answers.contains { $0.1.text.contains(customer) || $0.1.text.contains(api.dispatcher) })
        }
    }

    @Test func ifMatchAcceptsTheThreeForms() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id)
            let quoted = try await api.post(id, #"{"type":"enRoute"}"#, headers: [("If-Match", "\"1\"")])
            #expect(quoted.status == 201)
            let bare = try await api.post(id, #"{"type":"progress","kilometresAway":5}"#, headers: [("If-Match", "2")])
            #expect(bare.status == 201)
            let weak = try await api.post(id, #"{"type":"nearby"}"#, headers: [("If-Match", "W/\"3\"")])
            #expect(weak.status == 201)
            #expect(weak.header("ETag") == "\"4\"")
            let stale = try await api.post(id, #"{"type":"onSite"}"#, headers: [("If-Match", "\"3\"")])
            #expect(stale.status == 409)
            #expect(stale.errorCode == "version_conflict")
            #expect(try await api.eventCount(id) == 4)
        }
    }

    /// An unknown visit answers 404 whatever version `If-Match` names (0 included), with or without an
    /// idempotency key; a known visit at another version stays 409.
    @Test func ifMatchOnAnUnknownVisitIsNotFound() async throws {
        try await withAPIServer { api in
            let unknown = uniqueID("v")
            let plain = try await api.post(unknown, #"{"type":"enRoute"}"#)
            #expect(plain.status == 404)
            for version in ["\"0\"", "1", "W/\"7\""] {
                let unkeyed = try await api.post(unknown, #"{"type":"enRoute"}"#, headers: [("If-Match", version)])
                #expect(unkeyed.status == 404, "If-Match \(version): \(unkeyed.text)")
                #expect(unkeyed.errorCode == plain.errorCode)
                let keyed = try await api.post(
                    unknown, #"{"type":"enRoute"}"#, headers: [("If-Match", version), ("Idempotency-Key", "k-\(version)")])
                #expect(keyed.status == 404, "If-Match \(version) with a key: \(keyed.text)")
            }
            let known = uniqueID("v")
            try await api.schedule(known)
            #expect(
                try await api.post(known, #"{"type":"enRoute"}"#, headers: [("If-Match", "\"0\"")]).errorCode
                    == "version_conflict")
            #expect(try await api.eventCount(unknown) == 0)
        }
    }

    @Test func concurrentIfMatchHasOneWinner() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<8 {
                    group.addTask {
                        try await api.post(
                            id, "{\"type\":\"progress\",\"kilometresAway\":\(i)}", headers: [("If-Match", "\"1\"")]
                        )
                        .status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 201 }.count == 1)
            #expect(statuses.filter { $0 == 409 }.count == 7)
            #expect(try await api.eventCount(id) == 2)
        }
    }

    @Test func concurrentPostsWithoutIfMatchAllLand() async throws {
        try await withAPIServer { api in
            let id = uniqueID("v")
            try await api.schedule(id)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<10 {
                    group.addTask { try await api.post(id, "{\"type\":\"progress\",\"kilometresAway\":\(i)}").status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 201, count: 10))
            #expect(try await api.eventCount(id) == 11)
        }
    }

    @Test func healthReadinessAndMetrics() async throws {
        try await withAPIServer { api in
            #expect(try await api.call("GET", "/healthz", key: nil).status == 200)
            #expect(try await api.call("GET", "/readyz", key: nil).status == 200)
            try await api.schedule(uniqueID("v"))
            let metrics = try await api.call("GET", "/metrics", key: nil)
            #expect(metrics.status == 200)
            #expect(metrics.text.contains("livevisits_"))
        }
    }
}

/// The 4 KB budget is checked at accept time on the largest push the event implies (contract §6).
@Suite(.timeLimit(.minutes(5))) struct PushBudgetTests {
    @Test func aVisitWhosePushWouldPassFourKilobytesIsRefused() async throws {
        try await withAPIServer { api in
            let now = Int(Date().timeIntervalSince1970)
            let long = String(repeating: "x", count: 1024)
            let name = String(repeating: "n", count: 256)
            let body = """
                {"visitId":"\(uniqueID("big"))","customerId":"c-1",\
                "attributes":{"customerFirstName":"\(name)","serviceAddress":"\(long)","jobSummary":"\(long)"},\
                "technician":{"id":"t-1","name":"\(name)","avatarSymbol":"\(name)","vanDescription":"\(long)"},\
                "arrivalWindow":{"start":\(now + 600),"end":\(now + 1200)}}
                """
            let refused = try await api.call("POST", "/v1/visits", key: api.dispatcher, json: body)
            #expect(refused.status == 422)
            #expect(refused.errorCode == "push_too_large", "\(refused.text)")
        }
    }
}
