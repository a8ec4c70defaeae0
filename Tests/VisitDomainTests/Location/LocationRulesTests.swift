import Foundation
import Testing

@testable import VisitDomain

/// The location rules: great-circle distances, the shown (rounded) distance, when a fix turns a visit
/// `nearby` or is worth a `progress`, the fix's and the booking's input, and the rules' `location` block.
@Suite(.timeLimit(.minutes(1))) struct LocationRulesTests {
    static func point(_ latitude: Double, _ longitude: Double) -> ServiceLocation {
        ServiceLocation(latitude: latitude, longitude: longitude)!
    }

    struct Pair: Sendable, CustomTestStringConvertible {
        var name: String
        var from: (Double, Double)
        var to: (Double, Double)
        /// The great-circle distance on the mean sphere, kilometres.
        var kilometres: Double
        var testDescription: String { name }
    }

    static let pairs: [Pair] = [
        Pair(name: "London–Paris", from: (51.5074, -0.1278), to: (48.8566, 2.3522), kilometres: 343.56),
        Pair(name: "New York–Los Angeles", from: (40.7128, -74.0060), to: (34.0522, -118.2437), kilometres: 3935.75),
        Pair(name: "Sydney–Melbourne", from: (-33.8688, 151.2093), to: (-37.8136, 144.9631), kilometres: 713.43),
        Pair(name: "Berlin–Munich", from: (52.5200, 13.4050), to: (48.1351, 11.5820), kilometres: 504.42),
        Pair(name: "across the date line", from: (0, 179.5), to: (0, -179.5), kilometres: 111.20),
        Pair(name: "pole to pole", from: (90, 0), to: (-90, 0), kilometres: 20_015.11),
    ]

    @Test(arguments: pairs) func greatCircleDistancesOfKnownPairs(_ pair: Pair) {
        let a = Self.point(pair.from.0, pair.from.1)
        let b = Self.point(pair.to.0, pair.to.1)
        #expect(abs(a.kilometres(to: b) - pair.kilometres) < 0.02, "\(a.kilometres(to: b))")
        #expect(abs(b.kilometres(to: a) - a.kilometres(to: b)) < 1e-9, "symmetric")
        #expect(a.kilometres(to: a) == 0)
    }

    @Test func theShownDistanceIsRoundedToOneDecimal() {
        #expect(LocationRules.tenths(1.25) == 13)
        #expect(LocationRules.tenths(1.249) == 12)
        #expect(LocationRules.tenths(0.04) == 0)
        #expect(LocationRules.tenths(0.05) == 1)
        #expect(LocationRules.tenths(14.0) == 140)
        #expect(LocationRules.kilometres(tenths: 13) == 1.3)
    }

    /// A point `kilometres` due north of `origin` (a degree of latitude is the same length everywhere on the
    /// sphere).
    static func north(of origin: ServiceLocation, kilometres: Double) -> ServiceLocation {
        let degrees = kilometres / (ServiceLocation.earthRadiusKilometres * Double.pi / 180)
        return point(origin.latitude + degrees, origin.longitude)
    }

    static let home = point(51.5, -0.12)

    static func fix(_ kilometres: Double, accuracy: Double = 10) -> TechnicianFix {
        TechnicianFix(location: north(of: home, kilometres: kilometres), accuracyMetres: accuracy, recordedAt: 1_790_000_000)
    }

    static func visit(_ status: VisitStatus, at kilometres: Double) -> VisitUnderWay {
        VisitUnderWay(visitId: "v-1", status: status, location: home, kilometresAway: kilometres)
    }

    @Test func anEnRouteVisitWithinTheRadiusTurnsNearbyWithTheShownDistance() {
        let rules = LocationRules()
        #expect(
            rules.event(for: Self.fix(1.04), on: Self.visit(.enRoute, at: 1.5)) == .nearby(ArrivalUpdate(kilometresAway: 1.0)))
        #expect(rules.event(for: Self.fix(0.3), on: Self.visit(.enRoute, at: 0.3)) == .nearby(ArrivalUpdate(kilometresAway: 0.3)))
        // 1.06 shows as 1.1: outside the radius, a progress.
        #expect(
            rules.event(for: Self.fix(1.06), on: Self.visit(.enRoute, at: 1.5)) == .progress(ArrivalUpdate(kilometresAway: 1.1)))
        // Already nearby: only progress.
        #expect(
            rules.event(for: Self.fix(0.5), on: Self.visit(.nearby, at: 0.9)) == .progress(ArrivalUpdate(kilometresAway: 0.5)))
    }

    @Test func aProgressOnlyWhenTheShownDistanceMovesByMinChange() {
        let rules = LocationRules()
        // 5.04 shows as 5.0, the visit's 5.0: nothing.
        #expect(rules.event(for: Self.fix(5.04), on: Self.visit(.enRoute, at: 5.0)) == nil)
        // 5.06 shows as 5.1: one tenth, enough at the default 0.1.
        #expect(
            rules.event(for: Self.fix(5.06), on: Self.visit(.enRoute, at: 5.0)) == .progress(ArrivalUpdate(kilometresAway: 5.1)))
        // The visit's own distance is compared in tenths too (4.96 shows as 5.0).
        #expect(rules.event(for: Self.fix(5.0), on: Self.visit(.enRoute, at: 4.96)) == nil)
        var coarse = LocationRules()
        coarse.minChangeKm = 0.5
        #expect(coarse.event(for: Self.fix(5.4), on: Self.visit(.enRoute, at: 5.0)) == nil)
        #expect(
            coarse.event(for: Self.fix(5.5), on: Self.visit(.enRoute, at: 5.0)) == .progress(ArrivalUpdate(kilometresAway: 5.5)))
        #expect(
            coarse.event(for: Self.fix(4.5), on: Self.visit(.enRoute, at: 5.0)) == .progress(ArrivalUpdate(kilometresAway: 4.5)))
        // A threshold between two tenths takes the next one up.
        coarse.minChangeKm = 0.15
        #expect(coarse.event(for: Self.fix(5.1), on: Self.visit(.enRoute, at: 5.0)) == nil)
        #expect(coarse.event(for: Self.fix(5.2), on: Self.visit(.enRoute, at: 5.0)) != nil)
    }

    @Test func onlyVisitsUnderWayMove() {
        let rules = LocationRules()
        for status in VisitStatus.allCases where status != .enRoute && status != .nearby {
            #expect(rules.event(for: Self.fix(0.2), on: Self.visit(status, at: 9)) == nil, "\(status)")
        }
    }

    @Test func anInaccurateFixIsNotTrusted() {
        let rules = LocationRules()
        #expect(rules.trusts(Self.fix(1, accuracy: 200)))
        #expect(!rules.trusts(Self.fix(1, accuracy: 200.5)))
    }

    // MARK: input

    static func refusal(_ body: String) -> VisitInputError? {
        do {
            _ = try TechnicianFix.parse(Array(body.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test func aFixIsParsedAndBadFieldsAreNamed() throws {
        let fix = try TechnicianFix.parse(
            Array(#"{"latitude":51.5,"longitude":-0.12,"accuracyMetres":12.5,"recordedAt":1790000000.25}"#.utf8))
        #expect(fix.location == Self.point(51.5, -0.12))
        #expect(fix.accuracyMetres == 12.5 && fix.recordedAt == 1_790_000_000.25)
        let cases: [(String, String, VisitInputError.Code)] = [
            (#"{"latitude":90.1,"longitude":0,"accuracyMetres":1,"recordedAt":1}"#, "latitude", .invalidValue),
            (#"{"latitude":-91,"longitude":0,"accuracyMetres":1,"recordedAt":1}"#, "latitude", .invalidValue),
            (#"{"latitude":0,"longitude":180.5,"accuracyMetres":1,"recordedAt":1}"#, "longitude", .invalidValue),
            (#"{"latitude":0,"longitude":-181,"accuracyMetres":1,"recordedAt":1}"#, "longitude", .invalidValue),
            (#"{"latitude":"51.5","longitude":0,"accuracyMetres":1,"recordedAt":1}"#, "latitude", .wrongType),
            (#"{"latitude":0,"longitude":true,"accuracyMetres":1,"recordedAt":1}"#, "longitude", .wrongType),
            (#"{"latitude":0,"longitude":0,"accuracyMetres":-1,"recordedAt":1}"#, "accuracyMetres", .invalidValue),
            (#"{"latitude":0,"longitude":0,"accuracyMetres":"5","recordedAt":1}"#, "accuracyMetres", .wrongType),
            (#"{"latitude":0,"longitude":0,"accuracyMetres":1,"recordedAt":-5}"#, "recordedAt", .invalidValue),
            (#"{"latitude":0,"longitude":0,"accuracyMetres":1}"#, "recordedAt", .missingField),
            (#"{"latitude":0,"longitude":0,"accuracyMetres":1,"recordedAt":1,"altitude":3}"#, "altitude", .unknownField),
        ]
        for (body, field, code) in cases {
            let error = Self.refusal(body)
            #expect(error?.code == code, "\(body)")
            #expect(error?.field == field, "\(body)")
            #expect(error?.message.hasPrefix("\(field):") == true, "\(error?.message ?? "accepted")")
        }
        #expect(Self.refusal("{nope")?.code == .malformedJSON)
    }

    @Test func aBookingTakesAnOptionalLocationNamingBadCoordinates() throws {
        func body(_ location: String?) -> String {
            let extra = location.map { ",\"location\":\($0)" } ?? ""
            return """
                {"visitId":"v-1","customerId":"c-1",\
                "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},\
                "technician":{"id":"t-1","name":"Sam","avatarSymbol":"person","vanDescription":"White van"},\
                "arrivalWindow":{"start":1790000300,"end":1790000900}\(extra)}
                """
        }
        func parse(_ location: String?) throws(VisitInputError) -> VisitScheduled {
            try ScheduleVisitRequest.parse(Array(body(location).utf8)) { "generated" }
        }
        #expect(try parse(nil).location == nil)
        let booked = try parse(#"{"latitude":51.5,"longitude":-0.12}"#)
        #expect(booked.location.flatMap(ServiceLocation.init(text:)) == Self.point(51.5, -0.12))
        let cases: [(String, String)] = [
            (#"{"latitude":91,"longitude":0}"#, "location.latitude"),
            (#"{"latitude":0,"longitude":-180.01}"#, "location.longitude"),
            (#"{"latitude":"north","longitude":0}"#, "location.latitude"),
            (#"{"longitude":0}"#, "location.latitude"),
            (#"{"latitude":0,"longitude":0,"city":"x"}"#, "location.city"),
            (#""51.5,-0.12""#, "location"),
        ]
        for (location, field) in cases {
            do {
                _ = try parse(location)
                Issue.record("accepted \(location)")
            } catch {
                #expect(error.field == field, "\(location): \(error)")
                #expect(error.code.httpStatus == 422)
            }
        }
    }

    @Test func theLocationTravelsThroughTheStoredEventAndTheSnapshot() throws {
        let booked = try ScheduleVisitRequest.parse(
            Array(
                #"{"visitId":"v-1","customerId":"c-1","attributes":{"customerFirstName":"A","serviceAddress":"B","jobSummary":"C"},"technician":{"id":"t-1","name":"S","avatarSymbol":"p","vanDescription":"V"},"arrivalWindow":{"start":1,"end":2},"location":{"latitude":1.5,"longitude":2.5}}"#
                    .utf8)
        ) { "x" }
        let event = VisitEvent.scheduled(booked)
        let stored = try VisitEvent.decodeStored(eventType: "scheduled", data: event.storedData())
        #expect(stored == event)
        let state = try VisitDecider.evolve(nil, RecordedVisitEvent(event, version: 1, recordedAt: 100))
        #expect(state.location == booked.location)
        #expect(try VisitState(snapshot: state.snapshotJSON().serialized()) == state)
        // Never in a push: the start's attributes are the seed's and the visit id.
        #expect(!String(decoding: state.attributes.apsJSON.serialized(), as: UTF8.self).contains("latitude"))
    }

    // MARK: the rules' block

    @Test func theRulesLocationBlockIsReadAndValidated() throws {
        let shipped = ProjectionRulesTests.shipped
        #expect(try ProjectionRules.parse(shipped.serialized()).location == LocationRules())
        var json = shipped
        json.replace(["location", "minChangeKm"], with: .number(0.3))
        json.replace(["location", "nearbyRadiusKm"], with: .number(0.5))
        json.replace(["location", "maxAccuracyMetres"], with: .number(50))
        #expect(
            try ProjectionRules.parse(json.serialized()).location
                == LocationRules(nearbyRadiusKm: 0.5, minChangeKm: 0.3, maxAccuracyMetres: 50))
        var absent = shipped
        absent.replace(["location"], with: nil)
        #expect(try ProjectionRules.parse(absent.serialized()).location == LocationRules())
        let refused: [([String], JSONValue, String)] = [
            (
                ["location", "minChangeKm"], .number(0.05),
                "location.minChangeKm: expected kilometres between 0.1 (the shown precision) and 100"
            ),
            (["location", "minChangeKm"], .string("0.1"), "location.minChangeKm: expected a number, got a string"),
            (["location", "nearbyRadiusKm"], .number(-1), "location.nearbyRadiusKm: expected kilometres between 0 and 100"),
            (
                ["location", "maxAccuracyMetres"], .number(0),
                "location.maxAccuracyMetres: expected metres above 0 and at most 100000"
            ),
            (["location", "radius"], .number(1), "location.radius: unknown field"),
            (["location"], .number(1), "location: expected an object, got a number"),
        ]
        for (path, value, message) in refused {
            var bad = shipped
            bad.replace(path, with: value)
            do {
                _ = try ProjectionRules.parse(bad.serialized())
                Issue.record("accepted \(path)")
            } catch {
                #expect(error.code == .invalid)
                #expect(error.message == message)
            }
        }
    }
}
