import Testing

@testable import VisitDomain

@Suite(.timeLimit(.minutes(2))) struct StoredEventTests {
    /// An event, its `eventType` column and its stored `data`, written by hand: the data is the contract's
    /// request body for that event (CONTRACT.md §4, the seed's Sam, Alex and 12 Elm Row) without `type`,
    /// plus `schemaVersion` (2 for `scheduled`, 1 for the rest; Docs/domain.md "Stored form").
    struct Stored: Sendable, CustomTestStringConvertible {
        let event: VisitEvent
        let eventType: String
        let data: String
        var testDescription: String { "\(eventType) \(data)" }
    }

    static let sam =
        #""technician":{"id":"t-42","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van, blue stripe"}"#
    static let stored: [Stored] = [
        Stored(
            event: .scheduled(
                VisitScheduled(
                    customerId: "c-7",
                    attributes: ServiceVisitAttributes(
                        visitId: "v-1001", customerFirstName: "Alex", serviceAddress: "12 Elm Row", jobSummary: "Boiler check"),
                    technician: Technician(
                        id: "t-42", name: "Sam", avatarSymbol: "person.crop.circle", vanDescription: "White van, blue stripe"),
                    arrivalWindow: ArrivalWindow(start: 1_790_000_300, end: 1_790_000_900), kilometresAway: 14.0)),
            eventType: "scheduled",
            data: #"{"schemaVersion":2,"visitId":"v-1001","customerId":"c-7","#
                + #""attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},"#
                + sam + #","arrivalWindow":{"start":1790000300,"end":1790000900},"kilometresAway":14.0}"#),
        Stored(event: .enRoute(.none), eventType: "enRoute", data: #"{"schemaVersion":1}"#),
        Stored(
            event: .enRoute(ArrivalUpdate(kilometresAway: 7.25, arrivalWindow: ArrivalWindow(start: 10, end: 20))),
            eventType: "enRoute", data: #"{"schemaVersion":1,"kilometresAway":7.25,"arrivalWindow":{"start":10,"end":20}}"#),
        Stored(
            event: .nearby(
                ArrivalUpdate(kilometresAway: 1.2, arrivalWindow: ArrivalWindow(start: 1_790_000_300, end: 1_790_000_900))),
            eventType: "nearby",
            data: #"{"schemaVersion":1,"kilometresAway":1.2,"arrivalWindow":{"start":1790000300,"end":1790000900}}"#),
        Stored(event: .onSite, eventType: "onSite", data: #"{"schemaVersion":1}"#),
        Stored(event: .finishing(.none), eventType: "finishing", data: #"{"schemaVersion":1}"#),
        Stored(event: .completed, eventType: "completed", data: #"{"schemaVersion":1}"#),
        Stored(event: .cancelled(reason: nil), eventType: "cancelled", data: #"{"schemaVersion":1}"#),
        Stored(
            event: .cancelled(reason: "Customer not home"), eventType: "cancelled",
            data: #"{"schemaVersion":1,"reason":"Customer not home"}"#),
        Stored(
            event: .failed(reason: "No access to the boiler"), eventType: "failed",
            data: #"{"schemaVersion":1,"reason":"No access to the boiler"}"#),
        Stored(
            event: .progress(ArrivalUpdate(kilometresAway: 3)), eventType: "progress",
            data: #"{"schemaVersion":1,"kilometresAway":3}"#),
        Stored(
            event: .progress(ArrivalUpdate(arrivalWindow: ArrivalWindow(start: 5, end: 5))), eventType: "progress",
            data: #"{"schemaVersion":1,"arrivalWindow":{"start":5,"end":5}}"#),
        Stored(
            event: .progress(ArrivalUpdate(arrivalWindow: ArrivalWindow(start: 1805, end: 2405)), reason: "Traffic"),
            eventType: "progress", data: #"{"schemaVersion":1,"arrivalWindow":{"start":1805,"end":2405},"reason":"Traffic"}"#),
        Stored(
            event: .reassigned(Technician(id: "t-7", name: "Kim", avatarSymbol: "person.fill", vanDescription: "Red van"), .none),
            eventType: "reassigned",
            data:
                #"{"schemaVersion":1,"technician":{"id":"t-7","name":"Kim","avatarSymbol":"person.fill","vanDescription":"Red van"}}"#
        ),
        Stored(
            event: .reassigned(
                Technician(id: "t-42", name: "Sam", avatarSymbol: "person.crop.circle", vanDescription: "White van, blue stripe"),
                ArrivalUpdate(kilometresAway: 0, arrivalWindow: nil)),
            eventType: "reassigned", data: "{\"schemaVersion\":1," + sam + #","kilometresAway":0}"#),
    ]

    /// The code writes the hand-written form (as JSON: key order and number spelling aside) and reads it
    /// back to the same event.
    @Test(arguments: stored) func writesAndReadsTheStoredForm(_ expected: Stored) throws {
        #expect(expected.event.eventType == expected.eventType)
        #expect(try JSONValue.parse(expected.event.storedData()) == JSONValue.parse(Array(expected.data.utf8)))
        #expect(try VisitEvent.decodeStored(eventType: expected.eventType, data: Array(expected.data.utf8)) == expected.event)
    }

    @Test func everyEventTypeHasAStoredForm() {
        #expect(Set(Self.stored.map(\.eventType)) == Set(VisitEventType.allCases.map(\.rawValue)))
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

@Suite(.timeLimit(.minutes(2))) struct SnapshotTests {
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
