import Foundation
import JSON
import Postgres
import Runtime
import TestSupport
import Testing

@testable import HTTPAPI
@testable import VisitProjections

/// `GET /v1/technicians?date=YYYY-MM-DD`: the dispatch desk's day by technician, a projection of the events
/// kept in the visits' transaction and rebuilt by replay.
@Suite(.timeLimit(.minutes(5))) struct TechnicianRouteTests {
    /// 2026-12-06T00:00:00Z, the day most tests look at; the API's clock stands at 10:00 that day.
    static let day: Int = 1_796_515_200
    static let dayText = "2026-12-06"

    static func visitJSON(
        _ visitId: String, technician: String, name: String, van: String = "White van", start: Int, end: Int,
        customer: String = "c-1"
    ) -> String {
        """
        {"visitId":"\(visitId)","customerId":"\(customer)",\
        "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},\
        "technician":{"id":"\(technician)","name":"\(name)","avatarSymbol":"person.\(technician)","vanDescription":"\(van)"},\
        "arrivalWindow":{"start":\(start),"end":\(end)},"kilometresAway":14.5}
        """
    }

    func withDesk(_ body: (APIServer, ManualClock) async throws -> Void) async throws {
        let clock = ManualClock(now: Double(Self.day + 10 * 3600))
        try await withAPIServer(clock: clock) { api in try await body(api, clock) }
    }

    /// Two API processes on one database, on one clock.
    func withTwoDesks(_ body: (APIServer, APIServer) async throws -> Void) async throws {
        let clock = ManualClock(now: Double(Self.day + 10 * 3600))
        try await withAPIServer(clock: clock) { first in
            try await withAPIServer(databaseURL: first.databaseURL, clock: clock) { second in try await body(first, second) }
        }
    }

    func book(
        _ api: APIServer, _ visitId: String, _ technician: String, _ name: String, van: String = "White van", start: Int, end: Int
    )
        async throws
    {
        let answer = try await api.call(
            "POST", "/v1/visits", key: api.dispatcher,
            json: Self.visitJSON(visitId, technician: technician, name: name, van: van, start: start, end: end))
        #expect(answer.status == 201, "\(answer.text)")
    }

    func desk(_ api: APIServer, _ query: String = "?date=\(Self.dayText)", key: String? = nil) async throws -> RawResponse {
        try await api.call("GET", "/v1/technicians" + query, key: key ?? api.dispatcher)
    }

    /// The day as the read model's table holds it now, written as the route writes it: the route answers
    /// from memory (`TechnicianDays`), so what a rebuild wrote is checked here, in the table itself.
    func stored(_ api: APIServer, _ dayText: String) async throws -> String {
        let from = Int64(Self.day + (dayText == Self.dayText ? 0 : 86_400))
        return try await api.pool.withConnection { c in
            String(
                decoding: TechnicianReadModel.json(try TechnicianReadModel.day(from: from, to: from + 86_400, on: c)),
                as: UTF8.self)
        }
    }

    /// (technician id, name, [visit ids]) per technician, in the answer's order.
    func outline(_ answer: RawResponse) -> [String] {
        (answer.json?["technicians"] as? [[String: Any]] ?? []).map { technician in
            let visits = (technician["visits"] as? [[String: Any]] ?? []).compactMap { $0["visitId"] as? String }
            return "\(technician["id"] ?? "?") \(technician["name"] ?? "?"): \(visits.joined(separator: ","))"
        }
    }

    @Test func technicianByNameThenIdTheirVisitsByWindowAndTheDayInUTC() async throws {
        try await withDesk { api, _ in
            let d = Self.day
            // Zed's id sorts first, his name last; two Sams are told apart by id.
            try await book(api, "v-zed", "t-a", "Zed", start: d + 9 * 3600, end: d + 10 * 3600)
            try await book(api, "v-sam2", "t-2", "Sam", start: d + 8 * 3600, end: d + 9 * 3600)
            try await book(api, "v-sam1", "t-1", "Sam", start: d + 8 * 3600, end: d + 9 * 3600)
            // Bea's visits: by start, then end, then id.
            try await book(api, "v-b-late", "t-b", "Bea", start: d + 15 * 3600, end: d + 16 * 3600)
            try await book(api, "v-b-long", "t-b", "Bea", start: d + 12 * 3600, end: d + 14 * 3600)
            try await book(api, "v-b-y", "t-b", "Bea", start: d + 12 * 3600, end: d + 13 * 3600)
            try await book(api, "v-b-x", "t-b", "Bea", start: d + 12 * 3600, end: d + 13 * 3600)
            // The day's edges: its first and last second are in it, the seconds around them are not.
            try await book(api, "v-first", "t-e", "Eve", start: d, end: d + 3600)
            try await book(api, "v-last", "t-e", "Eve", start: d + 86_399, end: d + 86_400 + 3600)
            try await book(api, "v-before", "t-e", "Eve", start: d - 1, end: d + 3600)
            try await book(api, "v-after", "t-e", "Eve", start: d + 86_400, end: d + 86_400 + 3600)
            // An ended visit stays, with its status.
            try await book(api, "v-cancelled", "t-e", "Eve", start: d + 7 * 3600, end: d + 8 * 3600)
            #expect(try await api.post("v-cancelled", #"{"type":"cancelled","reason":"no access"}"#).status == 201)

            let answer = try await desk(api)
            #expect(answer.status == 200, "\(answer.text)")
            #expect(
                outline(answer) == [
                    "t-b Bea: v-b-x,v-b-y,v-b-long,v-b-late",
                    "t-e Eve: v-first,v-cancelled,v-last",
                    "t-1 Sam: v-sam1",
                    "t-2 Sam: v-sam2",
                    "t-a Zed: v-zed",
                ])
            // The whole shape of one technician, and nothing personal anywhere.
            let technicians = try #require(answer.json?["technicians"] as? [[String: Any]])
            let eve = try #require(technicians.first { $0["id"] as? String == "t-e" })
            #expect(Set(eve.keys) == ["id", "name", "avatarSymbol", "vanDescription", "visits"])
            #expect(eve["avatarSymbol"] as? String == "person.t-e" && eve["vanDescription"] as? String == "White van")
            let visits = try #require(eve["visits"] as? [[String: Any]])
            #expect(Set(visits[0].keys) == ["visitId", "status", "arrivalWindow", "kilometresAway"])
            #expect(visits[0]["status"] as? String == "scheduled")
            #expect(visits[0]["kilometresAway"] as? Double == 14.5)
            let window = try #require(visits[0]["arrivalWindow"] as? [String: Any])
            #expect(window["start"] as? Int == d && window["end"] as? Int == d + 3600)
            #expect(visits[1]["status"] as? String == "cancelled")
            for personal in ["Alex", "Elm Row", "Boiler", "no access", "c-1"] {
                #expect(!answer.text.contains(personal), "no personal field: \(personal)")
            }

            // The neighbouring days hold the visits at their edges; the default is the clock's day.
            #expect(outline(try await desk(api, "?date=2026-12-05")) == ["t-e Eve: v-before"])
            #expect(outline(try await desk(api, "?date=2026-12-07")) == ["t-e Eve: v-after"])
            #expect(try await desk(api, "").text == answer.text)
            #expect(outline(try await desk(api, "?date=2027-01-01")) == [])
            #expect(try await desk(api, "?date=2027-01-01").text == #"{"technicians":[]}"#)
        }
    }

    /// A day followed from the log keeps the statement's order while technicians come, go and are renamed,
    /// one change at a time: each answer is the one the table gives read whole, and the day is not read again.
    @Test func aFollowedDayKeepsTheOrderAsTechniciansComeGoAndAreRenamed() async throws {
        try await withDesk { api, _ in
            let d = Self.day
            for (n, name) in ["Mia", "Bo", "Zoe", "Al", "Mia", "Kit", "Bo", "Eve"].enumerated() {
                try await book(api, "v-\(n)", "t-\(n)", name, start: d + (8 + n) * 3600, end: d + (9 + n) * 3600)
            }
            #expect(try await desk(api).text == (try await stored(api, Self.dayText)))
            let (_, loads, sorts) = api.environment.visits.days.counts
            #expect(sorts == 1, "the day read whole was sorted once")
            let tomorrow = #"{"type":"progress","arrivalWindow":{"start":\#(d + 86_400),"end":\#(d + 86_400 + 60)}}"#
            let changes: [(String, () async throws -> Void)] = [
                (
                    "Al renamed Zack by a later booking",
                    { try await self.book(api, "v-10", "t-3", "Zack", start: d + 20 * 3600, end: d + 21 * 3600) }
                ),
                (
                    "Mia's only visit reassigned to a new technician, Ann",
                    {
                        let moved = try await api.post(
                            "v-0",
                            #"{"type":"reassigned","technician":{"id":"t-9","name":"Ann","avatarSymbol":"a","vanDescription":"b"}}"#
                        )
                        #expect(moved.status == 201, "\(moved.text)")
                    }
                ),
                (
                    "Zoe's only visit moved to tomorrow",
                    {
                        let moved = try await api.post("v-2", tomorrow)
                        #expect(moved.status == 201, "\(moved.text)")
                    }
                ),
                (
                    "a second Mia, told apart by id",
                    { try await self.book(api, "v-11", "t-10", "Mia", start: d + 7 * 3600, end: d + 8 * 3600) }
                ),
                (
                    "the first Mia renamed Aaron",
                    { try await self.book(api, "v-12", "t-4", "Aaron", start: d + 22 * 3600, end: d + 23 * 3600) }
                ),
                (
                    "one Bo renamed Bo B.",
                    { try await self.book(api, "v-13", "t-1", "Bo B.", start: d + 23 * 3600, end: d + 23 * 3600 + 60) }
                ),
            ]
            for (change, make) in changes {
                try await make()
                #expect(try await desk(api).text == (try await stored(api, Self.dayText)), "after: \(change)")
            }
            #expect(
                outline(try await desk(api)).map { $0.prefix { $0 != ":" } } == [
                    "t-4 Aaron", "t-9 Ann", "t-6 Bo", "t-1 Bo B.", "t-7 Eve", "t-5 Kit", "t-10 Mia", "t-3 Zack",
                ])
            let after = api.environment.visits.days.counts
            #expect(after.loads == loads, "the day was followed, not read whole again")
            #expect(after.sorts == sorts, "each technician placed by a search, the order never sorted again")
        }
    }

    @Test func reassignmentMovesTheVisitAndTheLatestBookingNamesTheTechnician() async throws {
        try await withDesk { api, _ in
            let d = Self.day
            try await book(api, "v-1", "t-1", "Sam", start: d + 9 * 3600, end: d + 10 * 3600)
            try await book(api, "v-2", "t-2", "Kimberly", van: "Old van", start: d + 11 * 3600, end: d + 12 * 3600)
            #expect(outline(try await desk(api)) == ["t-2 Kimberly: v-2", "t-1 Sam: v-1"])
            let reassigned = try await api.post(
                "v-1",
                #"{"type":"reassigned","technician":{"id":"t-2","name":"Kim","avatarSymbol":"person.kim","vanDescription":"Blue van"}}"#
            )
            #expect(reassigned.status == 201, "\(reassigned.text)")
            let answer = try await desk(api)
            #expect(outline(answer) == ["t-2 Kim: v-1,v-2"], "moved to t-2, named as the latest reassignment names her")
            let kim = try #require((answer.json?["technicians"] as? [[String: Any]])?.first)
            #expect(kim["vanDescription"] as? String == "Blue van" && kim["avatarSymbol"] as? String == "person.kim")
            // A later booking naming her otherwise wins in turn.
            try await book(api, "v-3", "t-2", "Kim B.", van: "Green van", start: d + 86_400 + 3600, end: d + 86_400 + 7200)
            let later = try #require((try await desk(api).json?["technicians"] as? [[String: Any]])?.first)
            #expect(later["name"] as? String == "Kim B." && later["vanDescription"] as? String == "Green van")
        }
    }

    @Test func progressAndOnSiteMoveTheVisitsDay() async throws {
        try await withDesk { api, clock in
            let d = Self.day
            try await book(api, "v-moved", "t-1", "Sam", start: d + 22 * 3600, end: d + 23 * 3600)
            try await book(api, "v-early", "t-1", "Sam", start: d + 86_400 + 3600, end: d + 86_400 + 7200)
            let moved = try await api.post(
                "v-moved", #"{"type":"progress","arrivalWindow":{"start":\#(d + 86_400 + 1800),"end":\#(d + 86_400 + 5400)}}"#)
            #expect(moved.status == 201, "\(moved.text)")
            #expect(outline(try await desk(api)) == [])
            #expect(outline(try await desk(api, "?date=2026-12-07")) == ["t-1 Sam: v-moved,v-early"])
            // On site collapses the window to the arrival: the visit booked for tomorrow arrived today.
            clock.set(now: Double(d + 11 * 3600))
            #expect(try await api.post("v-early", #"{"type":"onSite"}"#).status == 201)
            let today = try await desk(api)
            #expect(outline(today) == ["t-1 Sam: v-early"])
            let visit = try #require(
                ((today.json?["technicians"] as? [[String: Any]])?.first?["visits"] as? [[String: Any]])?.first)
            #expect(visit["status"] as? String == "onSite" && visit["kilometresAway"] as? Double == 0)
            let window = visit["arrivalWindow"] as? [String: Any]
            #expect(window?["start"] as? Int == d + 11 * 3600 && window?["end"] as? Int == d + 11 * 3600)
            #expect(outline(try await desk(api, "?date=2026-12-07")) == ["t-1 Sam: v-moved"])
        }
    }

    /// A delay writes several visits in one transaction (a write path of its own): the day follows it too.
    @Test func aDelayAcrossMidnightMovesTheVisitsDay() async throws {
        try await withDesk { api, _ in
            let d = Self.day
            try await book(api, "v-late", "t-1", "Sam", start: d + 23 * 3600, end: d + 23 * 3600 + 1800)
            try await book(api, "v-later", "t-1", "Sam", start: d + 23 * 3600 + 1800, end: d + 86_400)
            let delayed = try await api.call(
                "POST", "/v1/technicians/t-1/delay", key: api.dispatcher, json: #"{"minutes": 60}"#)
            #expect(delayed.status == 200, "\(delayed.text)")
            #expect(outline(try await desk(api)) == [])
            #expect(outline(try await desk(api, "?date=2026-12-07")) == ["t-1 Sam: v-late,v-later"])
        }
    }

    /// Two processes on one database: a day one of them holds in memory shows, at the next ask and with no
    /// wait, what the other wrote — a booking, a reassignment that renames the technician, progress, a visit
    /// moved to the next day — byte for byte as the statement reads the table, without reading the day whole.
    @Test func aDayHeldInMemoryShowsAtOnceWhatAnotherProcessWrote() async throws {
        try await withTwoDesks { first, second in
            let d = Self.day
            try await book(first, "v-1", "t-1", "Sam", start: d + 9 * 3600, end: d + 10 * 3600)
            try await book(first, "v-3", "t-3", "Lee", start: d + 13 * 3600, end: d + 14 * 3600)
            #expect(outline(try await desk(first)) == ["t-3 Lee: v-3", "t-1 Sam: v-1"])
            let loads = first.environment.visits.days.counts.loads

            try await book(second, "v-2", "t-2", "Kim", start: d + 11 * 3600, end: d + 12 * 3600)
            let reassigned = try await second.post(
                "v-1",
                #"{"type":"reassigned","technician":{"id":"t-2","name":"Kimberly","avatarSymbol":"a","vanDescription":"b"}}"#)
            #expect(reassigned.status == 201, "\(reassigned.text)")
            #expect(try await second.post("v-2", #"{"type":"enRoute","kilometresAway":7.25}"#).status == 201)
            let moved = try await second.post(
                "v-3", #"{"type":"progress","arrivalWindow":{"start":\#(d + 86_400),"end":\#(d + 86_400 + 60)}}"#)
            #expect(moved.status == 201, "\(moved.text)")

            let answer = try await desk(first)
            #expect(outline(answer) == ["t-2 Kimberly: v-1,v-2"])
            #expect(answer.text == (try await stored(first, Self.dayText)))
            #expect(outline(try await desk(first, "?date=2026-12-07")) == ["t-3 Lee: v-3"])
            #expect(first.environment.visits.days.counts.loads == loads + 1, "the day was read whole again")
        }
    }

    /// An event committed while an older transaction is still open elsewhere in the cluster waits behind the
    /// snapshot horizon before the log gives it in order; the day shows it at the next ask all the same.
    @Test func aDayShowsWhatWasCommittedBehindAnOpenTransaction() async throws {
        try await withTwoDesks { first, second in
            let d = Self.day
            try await book(first, "v-1", "t-1", "Sam", start: d + 9 * 3600, end: d + 10 * 3600)
            #expect(outline(try await desk(first)) == ["t-1 Sam: v-1"])
            // A transaction with an id, open until the check is done: the snapshot horizon stays below it.
            let held = try PostgresConnection(url: first.databaseURL)
            try held.execute(script: "BEGIN")
            try held.query("SELECT pg_current_xact_id()")
            defer { try? held.execute(script: "ROLLBACK") }
            try await book(second, "v-2", "t-2", "Kim", start: d + 11 * 3600, end: d + 12 * 3600)
            #expect(try await second.post("v-1", #"{"type":"enRoute","kilometresAway":3.5}"#).status == 201)
            let answer = try await desk(first)
            #expect(outline(answer) == ["t-2 Kim: v-2", "t-1 Sam: v-1"])
            #expect(answer.text == (try await stored(first, Self.dayText)))
        }
    }

    @Test func replayRebuildsTheSameAnswers() async throws {
        try await withDesk { api, clock in
            let d = Self.day
            try await book(api, "v-1", "t-1", "Sam", start: d + 9 * 3600, end: d + 10 * 3600)
            try await book(api, "v-2", "t-2", "Kimberly", start: d + 11 * 3600, end: d + 12 * 3600)
            try await book(api, "v-3", "t-3", "Lee", start: d + 13 * 3600, end: d + 14 * 3600)
            #expect(try await api.post("v-2", #"{"type":"enRoute","kilometresAway":7.25}"#).status == 201)
            #expect(
                try await api.post(
                    "v-1",
                    #"{"type":"reassigned","technician":{"id":"t-2","name":"Kim","avatarSymbol":"a","vanDescription":"b"}}"#
                ).status == 201)
            #expect(
                try await api.post(
                    "v-3", #"{"type":"progress","arrivalWindow":{"start":\#(d + 86_400),"end":\#(d + 86_400 + 60)}}"#
                )
                .status == 201)
            clock.advance(by: 60)
            #expect(try await api.post("v-2", #"{"type":"onSite"}"#).status == 201)
            #expect(try await api.post("v-2", #"{"type":"failed","reason":"no parts"}"#).status == 201)
            let days = ["2026-12-06", "2026-12-07"]
            var before: [String] = []
            for day in days { before.append(try await desk(api, "?date=\(day)").text) }
            #expect(outline(try await desk(api)) == ["t-2 Kim: v-1,v-2"])

            for (day, answer) in zip(days, before) { #expect(try await stored(api, day) == answer) }

            // Emptied, the table holds nothing; a replay (the CLI's) brings back the same answers byte for byte, in
            // the table and from the route (which reads a replaced table whole again).
            try await api.pool.withConnection { c in try c.execute(script: "DELETE FROM technician_visits") }
            #expect(try await stored(api, days[0]) == #"{"technicians":[]}"#)
            let report = try await VisitReplay(pool: api.pool, readModel: api.environment.readModel, projection: .technicians)
                .run()
            #expect(report.visits == 3 && report.events == 8)
            for (day, answer) in zip(days, before) {
                #expect(try await stored(api, day) == answer)
                #expect(try await desk(api, "?date=\(day)").text == answer)
            }

            // The migration that made the table filled it from the visits' rows there were: the same rows.
            let migration = try String(
                contentsOf: TestDatabase.migrationsDirectory.appendingPathComponent("0031_dispatch_desk.sql"), encoding: .utf8)
            let backfill = try #require(
                migration.range(of: "INSERT INTO technician_visits").map { String(migration[$0.lowerBound...]) })
            try await api.pool.withConnection { c in
                try c.execute(script: "DELETE FROM technician_visits")
                try c.execute(script: backfill)
            }
            for (day, answer) in zip(days, before) { #expect(try await stored(api, day) == answer) }

            // So does the command: `livevisits replay technicians`, and `livevisits replay` (every projection).
            var environment = ProcessInfo.processInfo.environment
            environment["LIVEVISITS_DATABASE_URL"] = api.databaseURL
            environment["LIVEVISITS_PROJECTIONS_DIR"] = TestDatabase.projectionsDirectory.path
            environment["LIVEVISITS_LOG_LEVEL"] = "error"
            let livevisits = try await BuiltProduct.livevisits()
            for arguments in [["replay", "technicians"], ["replay"]] {
                try await api.pool.withConnection { c in try c.execute(script: "DELETE FROM technician_visits") }
                let replayed = try await Subprocess.run(livevisits, arguments, environment: environment)
                #expect(replayed.status == 0, "\(arguments): \(replayed.stderr)")
                #expect(replayed.stdout.contains("replay technicians: done, 8 events, 3 visits"), "\(replayed.stdout)")
                #expect(replayed.stdout.contains("replay visits: done") == (arguments.count == 1), "\(replayed.stdout)")
                for (day, answer) in zip(days, before) {
                    #expect(try await stored(api, day) == answer)
                    #expect(try await desk(api, "?date=\(day)").text == answer)
                }
            }

            // The ops route rebuilds it too, by name; the visits' projection is untouched by it.
            try await api.pool.withConnection { c in try c.execute(script: "UPDATE technician_visits SET technician_name = 'x'") }
            let rebuilt = try await api.call("POST", "/v1/ops/projections/technicians/rebuild", key: api.ops)
            #expect(rebuilt.status == 200, "\(rebuilt.text)")
            #expect(rebuilt.json?["projection"] as? String == "technicians")
            for (day, answer) in zip(days, before) {
                #expect(try await stored(api, day) == answer)
                #expect(try await desk(api, "?date=\(day)").text == answer)
            }
            #expect(try await api.call("POST", "/v1/ops/projections/nope/rebuild", key: api.ops).status == 404)
        }
    }

    @Test func dispatchersAndOpsOnlyAndADateIsADay() async throws {
        try await withDesk { api, _ in
            let technician = try await api.key(.technician, "t-1")
            let customer = try await api.key(.customer, "c-1")
            #expect(try await desk(api, key: api.ops).status == 200)
            for key in [technician, customer] {
                let refused = try await desk(api, key: key)
                #expect(refused.status == 403 && refused.errorCode == "forbidden")
            }
            #expect(try await api.call("GET", "/v1/technicians", key: nil).status == 401)
            for bad in [
                "2026-13-01", "2026-02-29", "2026-04-31", "2026-00-10", "2026-1-05", "26-12-06", "2026-12-06T00:00:00Z",
                "20261206", "today", "", "1969-12-31", "2026-12-0a", "%EF%BC%92026-12-06",
            ] {
                let refused = try await desk(api, "?date=\(bad)")
                #expect(refused.status == 422, "\(bad): \(refused.status)")
                #expect(refused.errorCode == "invalid_value", "\(bad): \(refused.text)")
                let message = (refused.json?["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.hasPrefix("date:"), "names date: \(message)")
            }
            for good in ["2024-02-29", "1970-01-01", "9999-12-31"] {
                #expect(try await desk(api, "?date=\(good)").status == 200, "\(good)")
            }
        }
    }
}

/// The day's answer is written straight to bytes; it must say exactly what the same answer built as a
/// `JSONValue` says, whatever the names hold.
@Suite struct TechnicianDayJSONTests {
    @Test func theBytesAreTheJSONValuesSerialization() throws {
        let technicians = [
            TechnicianReadModel.Technician(
                id: "t-\"1\"", name: "<img src=x onerror=alert(1)> Zoë \\ \u{1}\n", avatarSymbol: "wrench.fill",
                vanDescription: "白色 van",
                visits: [
                    .init(
                        visitId: "v-1", status: "enRoute", windowStart: 1_796_515_200, windowEnd: 1_796_518_800,
                        kilometresAway: 8.3),
                    .init(visitId: "v-2", status: "completed", windowStart: -5, windowEnd: 0, kilometresAway: 0),
                ]),
            TechnicianReadModel.Technician(
                id: "t-2", name: "", avatarSymbol: "", vanDescription: "",
                visits: [.init(visitId: "v-3", status: "scheduled", windowStart: 1, windowEnd: 2, kilometresAway: 1e-7)]),
        ]
        let tree = JSONValue.object([
            JSONMember(
                "technicians",
                .array(
                    technicians.map { t -> JSONValue in
                        .object([
                            JSONMember("id", .string(t.id)), JSONMember("name", .string(t.name)),
                            JSONMember("avatarSymbol", .string(t.avatarSymbol)),
                            JSONMember("vanDescription", .string(t.vanDescription)),
                            JSONMember(
                                "visits",
                                .array(
                                    t.visits.map { v -> JSONValue in
                                        .object([
                                            JSONMember("visitId", .string(v.visitId)), JSONMember("status", .string(v.status)),
                                            JSONMember(
                                                "arrivalWindow",
                                                .object([
                                                    JSONMember("start", .number(Double(v.windowStart))),
                                                    JSONMember("end", .number(Double(v.windowEnd))),
                                                ])),
                                            JSONMember("kilometresAway", .number(v.kilometresAway)),
                                        ])
                                    })),
                        ])
                    }))
        ])
        #expect(String(decoding: TechnicianReadModel.json(technicians), as: UTF8.self) == tree.serializedString())
        #expect(String(decoding: TechnicianReadModel.json([]), as: UTF8.self) == #"{"technicians":[]}"#)
    }
}
