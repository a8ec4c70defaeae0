import Testing

@testable import VisitDomain

@Suite struct StoredEventTests {
    static let all: [VisitEvent] =
        VisitEventType.allCases.map(TestVisit.sample) + [
            .enRoute(ArrivalUpdate(kilometresAway: 7.25, arrivalWindow: ArrivalWindow(start: 10, end: 20))),
            .cancelled(reason: "Customer not home"),
            .reassigned(TestVisit.technician, ArrivalUpdate(kilometresAway: 0, arrivalWindow: nil)),
            .progress(ArrivalUpdate(arrivalWindow: ArrivalWindow(start: 5, end: 5))),
        ]

    @Test(arguments: all) func roundTrips(_ event: VisitEvent) throws {
        let data = event.storedData()
        let json = try JSONValue.parse(data)
        #expect(json["schemaVersion"] == .number(Double(VisitEvent.currentSchemaVersion(of: event.type))))
        #expect(try VisitEvent.decodeStored(eventType: event.eventType, data: data) == event)
        #expect(event.eventType == event.type.rawValue)
    }

    @Test func eventTypesAreTheContractsNames() {
        #expect(
            VisitEventType.allCases.map(\.rawValue) == [
                "scheduled", "enRoute", "nearby", "onSite", "finishing", "completed", "cancelled", "failed", "progress",
                "reassigned",
            ])
    }

    @Test func scheduledVersion1IsUpcast() throws {
        let v1 = """
            {"schemaVersion":1,"visitId":"v-1001","customerId":"c-7","customerFirstName":"Alex",
             "serviceAddress":"12 Elm Row","jobSummary":"Boiler check","technicianId":"t-42","technicianName":"Sam",
             "avatarSymbol":"person.crop.circle","vanDescription":"White van, blue stripe",
             "arrivalStart":1790000300,"arrivalEnd":1790000900}
            """
        let event = try VisitEvent.decodeStored(eventType: "scheduled", data: Array(v1.utf8))
        #expect(event == TestVisit.scheduled(kilometres: 0))
    }

    @Test func unreadableStoredEventsAreTypedErrors() {
        let cases: [(String, String, StoredEventError.Code)] = [
            ("teleported", #"{"schemaVersion":1}"#, .unknownEventType),
            ("enRoute", #"{"schemaVersion":2}"#, .unsupportedSchemaVersion),
            ("enRoute", #"{}"#, .unsupportedSchemaVersion),
            ("enRoute", #"{"schemaVersion":"1"}"#, .unsupportedSchemaVersion),
            ("failed", #"{"schemaVersion":1}"#, .corruptData),
            ("nearby", #"{"schemaVersion":1,"kilometresAway":"1.2"}"#, .corruptData),
            ("nearby", #"{"schemaVersion":1"#, .corruptData),
            ("scheduled", #"{"schemaVersion":1,"visitId":"v"}"#, .corruptData),
        ]
        for (type, data, code) in cases {
            do {
                _ = try VisitEvent.decodeStored(eventType: type, data: Array(data.utf8))
                Issue.record("decoded \(type) \(data)")
            } catch {
                #expect(error.code == code, "\(type) \(data): \(error)")
            }
        }
    }
}

@Suite struct SnapshotTests {
    @Test(arguments: VisitStatus.allCases) func snapshotRoundTrips(_ status: VisitStatus) throws {
        let state = try #require(try TestVisit.accepted(TestVisit.path(to: status)).last).state
        let restored = try VisitState(snapshot: state.snapshotJSON().serialized())
        #expect(restored == state)
    }

    @Test func corruptSnapshotsAreTypedErrors() {
        for text in ["{", "[]", #"{"schemaVersion":1}"#, #"{"schemaVersion":9}"#] {
            #expect(throws: StoredEventError.self) { try VisitState(snapshot: Array(text.utf8)) }
        }
    }
}
