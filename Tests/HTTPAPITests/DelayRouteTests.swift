import Foundation
import PersonalData
import Postgres
import Runtime
import Synchronization
import TestSupport
import Testing
import VisitCommands
import VisitDomain

/// `POST /v1/technicians/{id}/delay`: a technician running late moves the arrival window of each of their
/// visits not reached yet, in one transaction, idempotently.
@Suite(.timeLimit(.minutes(5))) struct DelayRouteTests {
    /// A visit of `technician` booked with its window opening `opensIn` seconds from now, for half an hour.
    static func visitJSON(_ id: String, technician: String, customer: String = "c-1", opensIn: Int = 600) -> String {
        let now = Int(Date().timeIntervalSince1970)
        return """
            {"visitId":"\(id)","customerId":"\(customer)",\
            "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},\
            "technician":{"id":"\(technician)","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
            "arrivalWindow":{"start":\(now + opensIn),"end":\(now + opensIn + 1800)},"kilometresAway":14.0}
            """
    }

    /// Books a visit of `technician` as the dispatcher.
    static func book(_ api: APIServer, _ id: String, technician: String) async throws {
        let booked = try await api.call(
            "POST", "/v1/visits", key: api.dispatcher, json: DelayRouteTests.visitJSON(id, technician: technician))
        #expect(booked.status == 201, "\(booked.text)")
    }

    /// The window a visit shows now.
    static func window(_ api: APIServer, _ id: String) async throws -> (start: Int, end: Int) {
        let visit = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
        let state = try #require(visit.json?["contentState"] as? [String: Any])
        return (try #require(state["arrivalStartEpoch"] as? Int), try #require(state["arrivalEndEpoch"] as? Int))
    }

    static func delay(
        _ api: APIServer, _ technician: String, _ body: String, key: String? = nil, headers: [(String, String)] = []
    ) async throws -> RawResponse {
        try await api.call(
            "POST", "/v1/technicians/\(technician)/delay", key: key ?? api.dispatcher, json: body, headers: headers)
    }

    /// The visits and versions a delay answered.
    static func moved(_ answer: RawResponse) -> [String: Int] {
        let visits = answer.json?["visits"] as? [[String: Any]] ?? []
        return Dictionary(
            uniqueKeysWithValues: visits.map { ($0["visitId"] as? String ?? "?", $0["version"] as? Int ?? -1) })
    }

    @Test func movesTheWindowOfEachVisitNotReachedYetAndNoOther() async throws {
        let file = try PersonalDataTests.keyFile()
        try await withAPIServer(personalData: PersonalDataKeys(current: file.key)) { api in
            let technician = uniqueID("t")
            let other = uniqueID("t")
            let run = uniqueID("d")
            // One visit in each status, and another technician's scheduled visit.
            let path: [String: [String]] = [
                "scheduled": [], "enRoute": ["enRoute"], "nearby": ["enRoute", "nearby"], "onSite": ["onSite"],
                "finishing": ["onSite", "finishing"], "completed": ["onSite", "completed"], "cancelled": ["cancelled"],
            ]
            var windows: [String: (start: Int, end: Int)] = [:]
            for (status, events) in path {
                let id = "\(run)-\(status)"
                #expect(
                    try await api.call(
                        "POST", "/v1/visits", key: api.dispatcher, json: DelayRouteTests.visitJSON(id, technician: technician)
                    ).status == 201)
                for event in events { #expect(try await api.post(id, "{\"type\":\"\(event)\"}").status == 201) }
                windows[id] = try await DelayRouteTests.window(api, id)
            }
            let othersVisit = "\(run)-other"
            try await DelayRouteTests.book(api, othersVisit, technician: other)
            let othersWindow = try await DelayRouteTests.window(api, othersVisit)

            let answer = try await DelayRouteTests.delay(
                api, technician, #"{"minutes": 25, "reason": "Stuck behind a lorry on the A1"}"#)
            #expect(answer.status == 200, "\(answer.text)")
            // In id order, each at the version its progress made.
            #expect(
                answer.text
                    == "{\"visits\":[{\"visitId\":\"\(run)-enRoute\",\"version\":3},{\"visitId\":\"\(run)-nearby\",\"version\":4},"
                    + "{\"visitId\":\"\(run)-scheduled\",\"version\":2}]}")
            for (status, events) in path {
                let id = "\(run)-\(status)"
                let before = try #require(windows[id])
                let after = try await DelayRouteTests.window(api, id)
                let delayed = ["scheduled", "enRoute", "nearby"].contains(status)
                if delayed {
                    #expect(after.start == before.start + 25 * 60 && after.end == before.end + 25 * 60, "\(status)")
                    #expect(try await api.eventCount(id) == events.count + 2, "\(status): one progress")
                    let visit = try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher)
                    #expect(visit.json?["status"] as? String == status, "a progress keeps the status")
                } else {
                    #expect(after == before, "\(status) is left alone")
                    #expect(try await api.eventCount(id) == events.count + 1, "\(status): nothing appended")
                }
            }
            #expect(try await DelayRouteTests.window(api, othersVisit) == othersWindow, "another technician's visit")
            #expect(try await api.eventCount(othersVisit) == 1)

            // The progress carries the reason: opened in the history, sealed in the log.
            let history = try await api.call("GET", "/v1/visits/\(run)-enRoute/events", key: api.dispatcher)
            let last = try #require((history.json?["events"] as? [[String: Any]])?.last)
            #expect(last["type"] as? String == "progress")
            let data = try #require(last["data"] as? [String: Any])
            #expect(data["reason"] as? String == "Stuck behind a lorry on the A1")
            #expect((data["arrivalWindow"] as? [String: Any])?["start"] as? Int == (windows["\(run)-enRoute"]?.start ?? 0) + 1500)
            #expect((last["actor"] as? [String: Any])?["role"] as? String == "dispatcher")
            let stored = try await api.pool.withConnection { c in
                try c.query("SELECT data::text AS d FROM events WHERE stream_name = \("visit-\(run)-enRoute") AND position = 3")
                    .first?["d"]
            }
            #expect(stored?.contains(SealedText.prefix) == true, "\(stored ?? "")")
            #expect(stored?.contains("lorry") == false, "the reason is sealed at rest")

            // A technician with no visit to move: 200 and an empty list.
            let none = try await DelayRouteTests.delay(api, uniqueID("t"), #"{"minutes": 5}"#)
            #expect(none.status == 200)
            #expect(none.text == #"{"visits":[]}"#)
        }
    }

    @Test func onlyADispatcherPostsADelay() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let id = uniqueID("v")
            try await DelayRouteTests.book(api, id, technician: technician)
            let technicianKey = try await api.key(.technician, technician)
            let customerKey = try await api.key(.customer, "c-1")
            for key in [technicianKey, customerKey, api.ops] {
                let refused = try await DelayRouteTests.delay(api, technician, #"{"minutes": 10}"#, key: key)
                #expect(refused.status == 403)
                #expect(refused.errorCode == "forbidden")
            }
            #expect(try await DelayRouteTests.delay(api, technician, #"{"minutes": 10}"#, key: "nope").status == 401)
            #expect(try await api.eventCount(id) == 1)
        }
    }

    @Test func badBodiesAndPathsAreRefusedNamingTheField() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let id = uniqueID("v")
            try await DelayRouteTests.book(api, id, technician: technician)
            let refusals: [(String, String)] = [
                (#"{"minutes": 0}"#, "invalid_value"),
                (#"{"minutes": 721}"#, "invalid_value"),
                (#"{"minutes": -5}"#, "invalid_value"),
                (#"{"minutes": 2.5}"#, "invalid_value"),
                (#"{"minutes": "30"}"#, "wrong_type"),
                (#"{"minutes": null}"#, "missing_field"),
                (#"{}"#, "missing_field"),
            ]
            for (body, code) in refusals {
                let refused = try await DelayRouteTests.delay(api, technician, body)
                #expect(refused.status == 422, "\(body)")
                #expect(refused.errorCode == code, "\(body): \(refused.text)")
                let message = (refused.json?["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.hasPrefix("minutes"), "\(body): \(message)")
            }
            for body in [
                #"{"minutes": 5, "reason": "bell\u0007"}"#, #"{"minutes": 5, "reason": "\u202Eright to left"}"#,
                #"{"minutes": 5, "reason": " "}"#,
            ] {
                let refused = try await DelayRouteTests.delay(api, technician, body)
                #expect(refused.status == 422, "\(body)")
                let message = (refused.json?["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.hasPrefix("reason"), "\(body): \(message)")
            }
            let unknown = try await DelayRouteTests.delay(api, technician, #"{"minutes": 5, "minuets": 5}"#)
            #expect(unknown.status == 422)
            #expect(unknown.errorCode == "unknown_field")
            #expect(try await DelayRouteTests.delay(api, technician, "{").status == 400)
            #expect(try await DelayRouteTests.delay(api, technician, "[]").status == 422)
            // A path id outside the id grammar names no technician.
            let badPath = try await api.call(
                "POST", "/v1/technicians/t%21x/delay", key: api.dispatcher, json: #"{"minutes": 5}"#)
            #expect(badPath.status == 404)
            #expect(try await api.eventCount(id) == 1, "nothing refused was appended")
            // The bounds themselves are accepted.
            #expect(try await DelayRouteTests.delay(api, technician, #"{"minutes": 1}"#).status == 200)
            #expect(
                try await DelayRouteTests.delay(api, technician, #"{"minutes": 720, "reason": "Van\nbroke down"}"#).status == 200)
            #expect(try await api.eventCount(id) == 3)
        }
    }

    @Test func aRetryWithTheSameKeyAnswersTheSameAndAppendsNothing() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let first = uniqueID("v")
            let second = uniqueID("v")
            for id in [first, second] {
                try await DelayRouteTests.book(api, id, technician: technician)
            }
            let key = [("Idempotency-Key", "late-\(technician)")]
            let answer = try await DelayRouteTests.delay(api, technician, #"{"minutes": 15, "reason": "Traffic"}"#, headers: key)
            #expect(answer.status == 200)
            #expect(DelayRouteTests.moved(answer) == [first: 2, second: 2])
            let windows = (try await DelayRouteTests.window(api, first), try await DelayRouteTests.window(api, second))

            // Equal JSON, other spelling: the first answer, and nothing moves again.
            let retried = try await DelayRouteTests.delay(
                api, technician, #"{ "reason": "Traffic", "minutes": 15 }"#, headers: key)
            #expect(retried.status == 200)
            #expect(retried.text == answer.text)
            #expect(try await api.eventCount(first) == 2)
            #expect(try await api.eventCount(second) == 2)
            #expect(try await DelayRouteTests.window(api, first) == windows.0)
            #expect(try await DelayRouteTests.window(api, second) == windows.1)

            // Another body under the key: 409, nothing appended.
            let reused = try await DelayRouteTests.delay(api, technician, #"{"minutes": 16}"#, headers: key)
            #expect(reused.status == 409)
            #expect(reused.errorCode == "idempotency_key_reused")
            #expect(try await api.eventCount(first) == 2)

            // A refusal is the key's first answer too.
            let badKey = [("Idempotency-Key", "bad-\(technician)")]
            let refused = try await DelayRouteTests.delay(api, technician, #"{"minutes": 0}"#, headers: badKey)
            #expect(refused.status == 422)
            #expect(try await DelayRouteTests.delay(api, technician, #"{"minutes": 0}"#, headers: badKey).text == refused.text)
        }
    }

    /// All or none: a failure after the first writes of the transaction (here the read model refusing one
    /// visit's row, after every event is inserted) leaves no event, no read-model change and no push of any
    /// visit; the same request retried once the fault is gone moves them all.
    @Test func aFailureInTheMiddleLeavesNoVisitMoved() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let first = "\(technician)-a"
            let broken = "\(technician)-b"
            let last = "\(technician)-c"
            let customer = try await api.key(.customer, "c-1")
            for id in [first, broken, last] {
                try await DelayRouteTests.book(api, id, technician: technician)
                let registration = "{\"pushToken\":\"\(pushToken(id))\",\"environment\":\"sandbox\",\"version\":1}"
                #expect(
                    try await api.call("PUT", "/v1/visits/\(id)/live-activities/a-\(id)", key: customer, json: registration)
                        .status == 204)
            }
            func deliveries() async throws -> Int {
                try await api.pool.withConnection { c in
                    try c.query(
                        "SELECT count(*)::int AS n FROM deliveries WHERE visit_id = ANY(\(PostgresBinaryArray([first, broken, last]))::text[])"
                    ).first!.int("n")
                }
            }
            let queued = try await deliveries()
            try await api.pool.withConnection { c in
                try c.execute(
                    script: """
                        CREATE FUNCTION refuse_broken_visit() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN
                            IF NEW.visit_id = '\(broken)' THEN RAISE EXCEPTION 'the read model refuses %', NEW.visit_id; END IF;
                            RETURN NEW;
                        END $$;
                        CREATE TRIGGER refuse_broken_visit BEFORE UPDATE ON visits FOR EACH ROW EXECUTE FUNCTION refuse_broken_visit();
                        """)
            }
            let before = [
                try await DelayRouteTests.window(api, first), try await DelayRouteTests.window(api, broken),
                try await DelayRouteTests.window(api, last),
            ]
            let key = [("Idempotency-Key", "fault-\(technician)")]
            let failed = try await DelayRouteTests.delay(api, technician, #"{"minutes": 30}"#, headers: key)
            #expect(failed.status == 500, "\(failed.text)")
            for id in [first, broken, last] { #expect(try await api.eventCount(id) == 1, "\(id): nothing appended") }
            let after = [
                try await DelayRouteTests.window(api, first), try await DelayRouteTests.window(api, broken),
                try await DelayRouteTests.window(api, last),
            ]
            #expect(after.map(\.start) == before.map(\.start))
            #expect(try await deliveries() == queued, "no push queued")

            // The failure was not kept under the key: once the fault is gone, the same request moves all three.
            try await api.pool.withConnection { c in try c.execute(script: "DROP TRIGGER refuse_broken_visit ON visits") }
            let moved = try await DelayRouteTests.delay(api, technician, #"{"minutes": 30}"#, headers: key)
            #expect(moved.status == 200, "\(moved.text)")
            #expect(DelayRouteTests.moved(moved) == [first: 2, broken: 2, last: 2])
            for (id, window) in zip([first, broken, last], before) {
                #expect(try await DelayRouteTests.window(api, id).start == window.start + 1800)
            }
            #expect(try await deliveries() == queued + 3, "one update per visit's activity")
        }
    }

    /// A visit written by a concurrent command while the delay's transaction runs: the delay's write waits
    /// for it, loses the race, and runs again on the new state — both writes stand, and the delay's other
    /// visit is moved once, not twice.
    @Test func aVisitWrittenConcurrentlyKeepsBothWrites() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let calm = "\(technician)-a"
            let busy = "\(technician)-b"
            for id in [calm, busy] {
                try await DelayRouteTests.book(api, id, technician: technician)
            }
            let before = (try await DelayRouteTests.window(api, calm), try await DelayRouteTests.window(api, busy))
            let handler = api.environment.commands
            let written = Mutex(false)
            let release = DispatchSemaphore(value: 0)
            // A command on `busy` holds its write uncommitted until the delay waits for it.
            let concurrent = Task {
                try await api.pool.withTransaction { c in
                    _ = try handler.execute(
                        visitId: busy, event: .progress(ArrivalUpdate(kilometresAway: 5)),
                        context: VisitCommandContext(actorRole: "technician", actorSubject: technician, correlationId: nil),
                        isCreation: false, on: c)
                    written.withLock { $0 = true }
                    guard release.wait(timeout: .now() + 60) == .success else {
                        throw PostgresError(code: .unavailable, message: "the delay never waited for the concurrent write")
                    }
                }
            }
            try await eventually("the concurrent write is in") { written.withLock { $0 } }
            async let delayed = DelayRouteTests.delay(api, technician, #"{"minutes": 10}"#)
            try await eventually("the delay waits on the concurrent write's lock") {
                try await api.pool.withConnection { c in
                    try c.query(
                        """
                        SELECT count(*)::int AS n FROM pg_stat_activity
                        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO events%'
                        """
                    ).first!.int("n") > 0
                }
            }
            release.signal()
            try await concurrent.value
            let answer = try await delayed
            #expect(answer.status == 200, "\(answer.text)")
            #expect(DelayRouteTests.moved(answer) == [calm: 2, busy: 3], "the delay came after the concurrent progress")
            #expect(try await api.eventCount(calm) == 2, "moved once")
            #expect(try await api.eventCount(busy) == 3, "both writes stand")
            let visit = try await api.call("GET", "/v1/visits/\(busy)", key: api.dispatcher)
            #expect(((visit.json?["contentState"] as? [String: Any])?["kilometresAway"] as? NSNumber)?.doubleValue == 5)
            #expect(try await DelayRouteTests.window(api, busy).start == before.1.start + 600)
            #expect(try await DelayRouteTests.window(api, calm).start == before.0.start + 600)
        }
    }
}

/// What a delay makes APNs receive: as for any `progress`, an update with the moved window to each Live
/// Activity of each visit moved, and a start still held until its window re-planned for the new window.
extension SimulatorDeliveryTests {
    @Test func aDelayPushesTheMovedWindowAndReplansAHeldStart() async throws {
        try await Harness.with { harness in
            let api = harness.api
            let technician = uniqueID("t")
            let customer = uniqueID("c")
            let customerKey = try await api.key(.customer, customer)
            let starter = pushToken("held-\(customer)")
            #expect(
                try await api.call(
                    "PUT", "/v1/customers/\(customer)/push-to-start-tokens/d-1", key: customerKey,
                    json: "{\"pushToken\":\"\(starter)\",\"environment\":\"sandbox\"}"
                ).status == 204)
            // Today's visit, followed by a registered activity; tomorrow's, whose start is held until 2 h before
            // its window.
            let today = "\(technician)-a"
            let later = "\(technician)-b"
            for (id, opensIn) in [(today, 600), (later, 5 * 3600)] {
                let booked = try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher,
                    json: DelayRouteTests.visitJSON(id, technician: technician, customer: customer, opensIn: opensIn))
                #expect(booked.status == 201)
            }
            let activity = pushToken("activity-\(today)")
            #expect(
                try await api.call(
                    "PUT", "/v1/visits/\(today)/live-activities/a-1", key: customerKey,
                    json: "{\"pushToken\":\"\(activity)\",\"environment\":\"sandbox\",\"version\":1}"
                ).status == 204)
            let before = try await DelayRouteTests.window(api, today)
            let laterBefore = try await DelayRouteTests.window(api, later)
            func heldStart() async throws -> (due: Int, start: Int?)? {
                try await api.pool.withConnection { c in
                    try c.query(
                        """
                        SELECT next_attempt_at,
                               (body::json->'aps'->'content-state'->>'arrivalStartEpoch')::bigint AS window_start
                        FROM deliveries WHERE visit_id = \(later) AND kind = 'start' AND state = 'pending'
                        """
                    ).first.map { (Int(try $0.double("next_attempt_at")), $0.optionalInt64("window_start").map(Int.init)) }
                }
            }
            let held = try #require(try await heldStart())
            #expect(held.due == laterBefore.start - 2 * 3600)

            let answer = try await DelayRouteTests.delay(api, technician, #"{"minutes": 60, "reason": "Flat tyre"}"#)
            #expect(answer.status == 200, "\(answer.text)")
            try await harness.drain(until: activity)
            let update = try #require(harness.delivered(to: activity).first)
            #expect(update.status == 200)
            #expect(update.aps?["event"]?.stringValue == "update")
            #expect(update.aps?["alert"] == nil, "a progress brings no alert")
            #expect(update.header("apns-priority") == "5")
            let state = update.aps?["content-state"]
            #expect(state?["status"]?.stringValue == "scheduled")
            #expect(state?["arrivalStartEpoch"]?.integerValue == Int64(before.start + 3600))
            #expect(state?["arrivalEndEpoch"]?.integerValue == Int64(before.end + 3600))
            #expect(!update.payload.contains("Flat tyre"), "the reason is not pushed")

            // The held start now waits for 2 h before the moved window, and carries it.
            let replanned = try #require(try await heldStart())
            #expect(replanned.due == laterBefore.start + 3600 - 2 * 3600)
            #expect(replanned.start == laterBefore.start + 3600)
            #expect(harness.delivered(to: starter).isEmpty, "still held")
        }
    }
}
