import Testing

@testable import EventStore

/// Event metadata is written with the one JSON escaper and read with the one JSON reader.
@Suite(.timeLimit(.minutes(1))) struct EventMetadataTests {
    @Test func writesSortedKeysWithoutAbsentFields() {
        #expect(EventMetadata().jsonText == "{}")
        #expect(EventMetadata(actorRole: "ops").jsonText == #"{"actorRole":"ops"}"#)
        #expect(
            EventMetadata(actorRole: "dispatcher", actorSubject: "d-1", correlationId: "c", causationId: "x").jsonText
                == #"{"actorRole":"dispatcher","actorSubject":"d-1","causationId":"x","correlationId":"c"}"#)
    }

    @Test func carriesTheActorsDisplayNameWhenThereIsOne() {
        let named = EventMetadata(actorRole: "technician", actorSubject: "t-1", actorName: "Zoë \"Z\" Ng")
        #expect(named.jsonText == #"{"actorName":"Zoë \"Z\" Ng","actorRole":"technician","actorSubject":"t-1"}"#)
        #expect(EventMetadata(jsonText: named.jsonText) == named)
        #expect(EventMetadata(jsonText: #"{"actorRole": "ops"}"#).actorName == nil)
    }

    @Test func readsBackWhatItWroteAndWhatPostgreSQLReturns() {
        let tricky = EventMetadata(
            actorRole: "a\"b\\c", actorSubject: "line\nbreak\t\u{1}é😀", correlationId: nil, causationId: "")
        #expect(EventMetadata(jsonText: tricky.jsonText) == tricky)
        // jsonb's text form has spaces after ':' and ','.
        #expect(
            EventMetadata(jsonText: #"{"actorRole": "customer", "actorSubject": "c-7"}"#)
                == EventMetadata(actorRole: "customer", actorSubject: "c-7"))
        #expect(EventMetadata(jsonText: "not json") == EventMetadata())
        #expect(EventMetadata(jsonText: #"{"actorRole": 5, "actorSubject": "s"}"#) == EventMetadata(actorSubject: "s"))
    }
}
