import Foundation
import JSON
import PersonalData
import Postgres
import Runtime
import TestSupport
import Testing
import VisitDomain
import VisitProjections

/// A visit's service location (sealed with the customer's personal data, shown to dispatchers and ops only,
/// erased with the customer) and technicians' location fixes (`POST /v1/technicians/{id}/location`): the
/// distance to each visit under way, `nearby` inside the radius, `progress` past the minimum change, stale
/// and inaccurate fixes ignored, and a fix that changes nothing appending nothing.
@Suite(.timeLimit(.minutes(5))) struct TechnicianLocationTests {
    /// Where the tests' visits are (central London).
    static let home = (latitude: 51.5, longitude: -0.12)

    /// The point `kilometres` due north of `home`.
    static func north(_ kilometres: Double) -> (latitude: Double, longitude: Double) {
        (home.latitude + kilometres / (ServiceLocation.earthRadiusKilometres * Double.pi / 180), home.longitude)
    }

    static func booking(
        _ visitId: String, customer: String, technician: String, kilometres: Double = 14.0,
        location: (latitude: Double, longitude: Double)? = home
    ) -> String {
        let now = Int(Date().timeIntervalSince1970)
        let place = location.map { ",\"location\":{\"latitude\":\($0.latitude),\"longitude\":\($0.longitude)}" } ?? ""
        return """
            {"visitId":"\(visitId)","customerId":"\(customer)",\
            "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},\
            "technician":{"id":"\(technician)","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van"},\
            "arrivalWindow":{"start":\(now + 600),"end":\(now + 1800)},"kilometresAway":\(kilometres)\(place)}
            """
    }

    /// A visit booked with a location (unless `location` is nil) and put `enRoute` by the dispatcher, once the
    /// API's board of visits under way has it (when it has a location).
    static func visitUnderWay(
        _ api: APIServer, technician: String, kilometres: Double = 14.0,
        location: (latitude: Double, longitude: Double)? = home
    ) async throws -> String {
        let id = uniqueID("v")
        let booked = try await api.call(
            "POST", "/v1/visits", key: api.dispatcher,
            json: booking(id, customer: uniqueID("c"), technician: technician, kilometres: kilometres, location: location))
        #expect(booked.status == 201, "\(booked.text)")
        #expect(try await api.post(id, #"{"type":"enRoute"}"#).status == 201)
        if location != nil {
            try await eventually("the board holds \(id)", within: 10) { api.environment.locations.isTracking(id) }
        }
        return id
    }

    struct Fix {
        var kilometres: Double
        var accuracy: Double = 10
        var recordedAt: Double
    }

    static func fixJSON(_ fix: Fix) -> String {
        let point = north(fix.kilometres)
        return """
            {"latitude":\(point.latitude),"longitude":\(point.longitude),"accuracyMetres":\(fix.accuracy),"recordedAt":\(fix.recordedAt)}
            """
    }

    static func post(_ api: APIServer, technician: String, key: String?, _ fix: Fix) async throws -> RawResponse {
        try await api.call("POST", "/v1/technicians/\(technician)/location", key: key, json: fixJSON(fix))
    }

    static func events(_ answer: RawResponse) -> [[String: Any]] { (answer.json?["events"] as? [[String: Any]]) ?? [] }

    static func visit(_ api: APIServer, _ id: String) async throws -> [String: Any] {
        try await api.call("GET", "/v1/visits/\(id)", key: api.dispatcher).json ?? [:]
    }

    static func kilometres(_ visit: [String: Any]) -> Double? {
        (visit["contentState"] as? [String: Any])?["kilometresAway"] as? Double
    }

    // MARK: fixes

    @Test func anEnRouteVisitTurnsNearbyInsideTheRadiusAsTheTechnician() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let key = try await api.key(.technician, technician)
            let id = try await Self.visitUnderWay(api, technician: technician)
            let t = Date().timeIntervalSince1970
            // 5.0 km: a progress from 14.0.
            let far = try await Self.post(api, technician: technician, key: key, Fix(kilometres: 5.0, recordedAt: t))
            #expect(far.status == 202, "\(far.text)")
            #expect(far.json?["accepted"] as? Bool == true)
            #expect(Self.events(far).map { $0["type"] as? String } == ["progress"])
            #expect(Self.events(far).first?["kilometresAway"] as? Double == 5.0)
            // 0.94 km shows as 0.9, inside the 1.0 km radius: nearby.
            let near = try await Self.post(api, technician: technician, key: key, Fix(kilometres: 0.94, recordedAt: t + 1))
            #expect(Self.events(near).map { $0["type"] as? String } == ["nearby"])
            let visit = try await Self.visit(api, id)
            #expect(visit["status"] as? String == "nearby")
            #expect(Self.kilometres(visit) == 0.9)
            let history = try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher)
            let last = (history.json?["events"] as? [[String: Any]])?.last
            #expect(last?["type"] as? String == "nearby")
            #expect((last?["actor"] as? [String: Any])?["role"] as? String == "technician")
            #expect((last?["actor"] as? [String: Any])?["subject"] as? String == technician)
            let fixed = ((history.json?["events"] as? [[String: Any]]) ?? []).dropFirst()
            #expect(
                fixed.allSatisfy {
                    ($0["data"] as? [String: Any])?.keys.sorted() == ["kilometresAway", "schemaVersion"]
                        || $0["type"] as? String == "enRoute"
                },
                "no coordinates of a fix are kept: \(history.text)")
            // Nearby now: a closer fix is a progress, never a second nearby.
            let closer = try await Self.post(api, technician: technician, key: key, Fix(kilometres: 0.4, recordedAt: t + 2))
            #expect(Self.events(closer).map { $0["type"] as? String } == ["progress"])
            #expect(try await api.eventCount(id) == 5)
        }
    }

    @Test func aFixThatChangesNothingAppendsNothing() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let key = try await api.key(.technician, technician)
            let id = try await Self.visitUnderWay(api, technician: technician, kilometres: 14.0)
            let before = try await api.eventCount(id)
            let t = Date().timeIntervalSince1970
            // 14.04 shows as 14.0, the visit's distance; 13.96 too.
            for (i, kilometres) in [14.04, 13.96, 14.0].enumerated() {
                let answer = try await Self.post(
                    api, technician: technician, key: key, Fix(kilometres: kilometres, recordedAt: t + Double(i)))
                #expect(answer.status == 202)
                #expect(answer.json?["accepted"] as? Bool == true)
                #expect(Self.events(answer).isEmpty, "\(answer.text)")
            }
            #expect(try await api.eventCount(id) == before)
            // One tenth is enough at the default minimum change.
            let moved = try await Self.post(api, technician: technician, key: key, Fix(kilometres: 13.9, recordedAt: t + 5))
            #expect(Self.events(moved).first?["kilometresAway"] as? Double == 13.9)
            #expect(try await api.eventCount(id) == before + 1)
            // And the same distance again: nothing.
            let same = try await Self.post(api, technician: technician, key: key, Fix(kilometres: 13.88, recordedAt: t + 6))
            #expect(Self.events(same).isEmpty)
            #expect(try await api.eventCount(id) == before + 1)
        }
    }

    @Test func staleAndInaccurateFixesChangeNothing() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let key = try await api.key(.technician, technician)
            let id = try await Self.visitUnderWay(api, technician: technician)
            let t = Date().timeIntervalSince1970
            #expect(
                Self.events(try await Self.post(api, technician: technician, key: key, Fix(kilometres: 8, recordedAt: t))).count
                    == 1)
            let before = try await api.eventCount(id)
            let stale = try await Self.post(api, technician: technician, key: key, Fix(kilometres: 3, recordedAt: t - 1))
            #expect(stale.status == 202)
            #expect(stale.json?["accepted"] as? Bool == false)
            #expect(stale.json?["ignored"] as? String == "stale")
            let vague = try await Self.post(
                api, technician: technician, key: key, Fix(kilometres: 3, accuracy: 250, recordedAt: t + 1))
            #expect(vague.json?["accepted"] as? Bool == false)
            #expect(vague.json?["ignored"] as? String == "inaccurate")
            #expect(try await api.eventCount(id) == before)
            // An inaccurate fix is not accepted: a fix older than it but newer than the last accepted one counts.
            let later = try await Self.post(api, technician: technician, key: key, Fix(kilometres: 3, recordedAt: t + 0.5))
            #expect(later.json?["accepted"] as? Bool == true)
            #expect(Self.events(later).map { $0["type"] as? String } == ["progress"])
            #expect(Self.kilometres(try await Self.visit(api, id)) == 3.0)
            let metrics = try await api.call("GET", "/metrics", key: nil).text
            for (outcome, count) in [("appended", 2), ("stale", 1), ("inaccurate", 1)] {
                #expect(metrics.contains("livevisits_location_fixes_total{outcome=\"\(outcome)\"} \(count)"), "\(outcome)")
            }
        }
    }

    @Test func aVisitWithoutALocationOrNotUnderWayIsSkipped() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let key = try await api.key(.technician, technician)
            let unplaced = try await Self.visitUnderWay(api, technician: technician, location: nil)
            // Booked with a location but still scheduled: not under way.
            let waiting = uniqueID("v")
            #expect(
                try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher,
                    json: Self.booking(waiting, customer: uniqueID("c"), technician: technician)
                ).status == 201)
            let placed = try await Self.visitUnderWay(api, technician: technician)
            let answer = try await Self.post(
                api, technician: technician, key: key, Fix(kilometres: 0.5, recordedAt: Date().timeIntervalSince1970))
            #expect(Self.events(answer).map { $0["visitId"] as? String } == [placed])
            #expect(try await api.eventCount(unplaced) == 2)
            #expect(try await api.eventCount(waiting) == 1)
        }
    }

    @Test func whoMayPostAFixAndBadFixesAreNamed() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let other = try await api.key(.technician, uniqueID("t"))
            let customer = try await api.key(.customer, uniqueID("c"))
            let id = try await Self.visitUnderWay(api, technician: technician)
            let t = Date().timeIntervalSince1970
            let fix = Fix(kilometres: 6, recordedAt: t)
            #expect(try await Self.post(api, technician: technician, key: other, fix).status == 403)
            #expect(try await Self.post(api, technician: technician, key: customer, fix).status == 403)
            #expect(try await Self.post(api, technician: technician, key: api.ops, fix).status == 403)
            #expect(try await Self.post(api, technician: technician, key: nil, fix).status == 401)
            #expect(try await api.eventCount(id) == 2)
            // A dispatcher may post for the technician: appended as the technician.
            let dispatched = try await Self.post(api, technician: technician, key: api.dispatcher, fix)
            #expect(dispatched.status == 202)
            #expect(Self.events(dispatched).map { $0["type"] as? String } == ["progress"])
            let history = try await api.call("GET", "/v1/visits/\(id)/events", key: api.dispatcher)
            let actor = (history.json?["events"] as? [[String: Any]])?.last?["actor"] as? [String: Any]
            #expect(actor?["role"] as? String == "technician" && actor?["subject"] as? String == technician)

            let path = "/v1/technicians/\(technician)/location"
            let refused: [(String, String)] = [
                (#"{"latitude":90.5,"longitude":0,"accuracyMetres":5,"recordedAt":1}"#, "latitude"),
                (#"{"latitude":0,"longitude":-180.5,"accuracyMetres":5,"recordedAt":1}"#, "longitude"),
                (#"{"latitude":"0","longitude":0,"accuracyMetres":5,"recordedAt":1}"#, "latitude"),
                (#"{"latitude":0,"longitude":0,"accuracyMetres":-0.5,"recordedAt":1}"#, "accuracyMetres"),
                (#"{"latitude":0,"longitude":0,"accuracyMetres":5}"#, "recordedAt"),
                // Far ahead of the server's clock: it would make every later fix look stale.
                (#"{"latitude":0,"longitude":0,"accuracyMetres":5,"recordedAt":\#(t + 3600)}"#, "recordedAt"),
            ]
            for (body, field) in refused {
                let answer = try await api.call("POST", path, key: api.dispatcher, json: body)
                #expect(answer.status == 422, "\(body): \(answer.text)")
                let message = (answer.json?["error"] as? [String: Any])?["message"] as? String
                #expect(message?.hasPrefix("\(field):") == true, "\(answer.text)")
            }
            #expect(try await api.call("POST", path, key: api.dispatcher, json: "{nope").status == 400)
            #expect(
                try await api.call("POST", "/v1/technicians/bad%20id/location", key: api.dispatcher, json: "{}").status == 404)
            #expect(try await api.eventCount(id) == 3)
        }
    }

    /// A visit put under way through `first`, once `second`'s board holds it (within `within` seconds), and a fix
    /// 2.5 km out posted through `second` that moves it (`progress`): the technician, their key, the visit and
    /// the fix's time.
    static func underWayThroughTheOther(_ first: APIServer, seenBy second: APIServer, within: Double) async throws
        -> (technician: String, key: String, visitId: String, fixedAt: Double)
    {
        let technician = uniqueID("t")
        let key = try await first.key(.technician, technician)
        let id = try await Self.visitUnderWay(first, technician: technician)
        try await eventually("the second process's board holds \(id)", within: within) {
            second.environment.locations.isTracking(id)
        }
        let t = Date().timeIntervalSince1970
        let answer = try await Self.post(second, technician: technician, key: key, Fix(kilometres: 2.5, recordedAt: t))
        #expect(Self.events(answer).map { $0["type"] as? String } == ["progress"], "\(answer.text)")
        return (technician, key, id, t)
    }

    /// Two API processes on one database: a visit put under way through one is on the other's board, and a fix
    /// through the other moves it.
    @Test func anotherProcessSeesVisitsComeUnderWayAndLeave() async throws {
        try await withAPIServer { first in
            try await withAPIServer(databaseURL: first.databaseURL) { second in
                let (technician, key, id, t) = try await Self.underWayThroughTheOther(first, seenBy: second, within: 10)
                // The first process hears of the new distance: the same fix there changes nothing.
                try await eventually("the first process's board moved", within: 10) {
                    first.environment.locations.shownKilometres(id) == 2.5
                }
                let again = try await Self.post(first, technician: technician, key: key, Fix(kilometres: 2.5, recordedAt: t + 1))
                #expect(Self.events(again).isEmpty, "\(again.text)")
                // On site through the first: off both boards.
                #expect(try await first.post(id, #"{"type":"onSite"}"#).status == 201)
                try await eventually("the second process's board let go of \(id)", within: 10) {
                    !second.environment.locations.isTracking(id)
                }
                let after = try await Self.post(second, technician: technician, key: key, Fix(kilometres: 0.1, recordedAt: t + 2))
                #expect(Self.events(after).isEmpty)
            }
        }
    }

    /// A visit put under way through another process while a transaction stays open elsewhere in the cluster
    /// (a long report, a dump): its event waits behind the snapshot horizon, yet this process's board takes the
    /// visit at once, and its technician's fixes count.
    @Test func aVisitComesUnderWayWhileAnotherTransactionStaysOpen() async throws {
        try await withAPIServer { first in
            try await withAPIServer(databaseURL: first.databaseURL) { second in
                try await eventually("both boards loaded", within: 10) {
                    first.environment.locations.isLoaded && second.environment.locations.isLoaded
                }
                // A transaction with an id, open until the check is done: the snapshot horizon stays below it.
                let held = try PostgresConnection(url: first.databaseURL)
                try held.execute(script: "BEGIN")
                try held.query("SELECT pg_current_xact_id()")
                defer { try? held.execute(script: "ROLLBACK") }
                _ = try await Self.underWayThroughTheOther(first, seenBy: second, within: 3)
            }
        }
    }

    // MARK: the booking's location

    @Test func theLocationIsSealedShownToDispatchersAndOpsOnlyAndErasedWithTheCustomer() async throws {
        try await withAPIServer { api in
            let technician = uniqueID("t")
            let customer = uniqueID("c")
            let id = uniqueID("v")
            // Digits no other value in the database holds.
            let marker = Double(Int.random(in: 100_000...999_999)) / 1e7
            let latitude = 51.0 + marker
            let longitude = -0.5 - marker
            let booked = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher,
                json: Self.booking(id, customer: customer, technician: technician, location: (latitude, longitude)),
                headers: [("Idempotency-Key", "k-\(id)")])
            #expect(booked.status == 201, "\(booked.text)")
            let markerText = String(String(latitude).dropFirst(3))
            let dump = try await PersonalDataTests.dump(api.databaseURL)
            #expect(!dump.contains(markerText), "no plain location in the dump")

            let technicianKey = try await api.key(.technician, technician)
            let customerKey = try await api.key(.customer, customer)
            for key in [api.dispatcher, api.ops] {
                // Read with the project's parser: Foundation's can land one unit in the last place off.
                let location = try JSONValue.parse(try await api.call("GET", "/v1/visits/\(id)", key: key).text)["location"]
                #expect(location?["latitude"]?.doubleValue == latitude)
                #expect(location?["longitude"]?.doubleValue == longitude)
                let history = try await api.call("GET", "/v1/visits/\(id)/events", key: key)
                #expect(history.text.contains(String(latitude)), "\(history.text)")
            }
            for key in [technicianKey, customerKey] {
                let visit = try await api.call("GET", "/v1/visits/\(id)", key: key)
                #expect(visit.status == 200)
                #expect(visit.json?["location"] == nil, "\(visit.text)")
                let history = try await api.call("GET", "/v1/visits/\(id)/events", key: key)
                #expect(history.status == 200)
                #expect(!history.text.contains("location") && !history.text.contains(markerText), "\(history.text)")
                let list = try await api.call("GET", "/v1/visits", key: key)
                #expect(!list.text.contains(markerText))
            }
            // A technician's event answer carries no location either.
            let moving = try await api.post(id, #"{"type":"enRoute"}"#, key: technicianKey)
            #expect(moving.status == 201 && !moving.text.contains(markerText))
            // Without one, there is none to show.
            let bare = uniqueID("v")
            #expect(
                try await api.call(
                    "POST", "/v1/visits", key: api.dispatcher,
                    json: Self.booking(bare, customer: customer, technician: technician, location: nil)
                ).status == 201)
            let unplaced = try await api.call("GET", "/v1/visits/\(bare)", key: api.dispatcher)
            #expect(unplaced.status == 200 && unplaced.json?.keys.contains("location") == false, "\(unplaced.text)")
            // Bad coordinates are refused naming the field.
            let refused = try await api.call(
                "POST", "/v1/visits", key: api.dispatcher,
                json: Self.booking(uniqueID("v"), customer: customer, technician: technician, location: (91, 0)))
            #expect(refused.status == 422)
            #expect(((refused.json?["error"] as? [String: Any])?["message"] as? String)?.hasPrefix("location.latitude:") == true)

            // Erased with the customer: null everywhere, also after a replay.
            for visit in [id, bare] {
                #expect(try await api.post(visit, #"{"type":"onSite"}"#).status == 201)
                #expect(try await api.post(visit, #"{"type":"completed"}"#).status == 201)
            }
            #expect(try await api.call("DELETE", "/v1/customers/\(customer)", key: api.ops).status == 204)
            func checkErased() async throws {
                let visit = try await api.call("GET", "/v1/visits/\(id)", key: api.ops)
                #expect(visit.status == 200)
                #expect(visit.json?["location"] is NSNull, "\(visit.text)")
                let history = try await api.call("GET", "/v1/visits/\(id)/events", key: api.ops)
                let data = (history.json?["events"] as? [[String: Any]])?.first?["data"] as? [String: Any]
                #expect(data?["location"] is NSNull, "\(history.text)")
            }
            try await checkErased()
            _ = try await VisitReplay(pool: api.pool, readModel: api.environment.readModel).run()
            try await checkErased()
        }
    }
}
