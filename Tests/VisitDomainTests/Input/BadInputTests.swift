import Foundation
import Testing

@testable import VisitDomain

/// Issue 3 "Bad input": each case is a typed validation error whose message names the field.
@Suite(.timeLimit(.minutes(2))) struct BadInputTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var body: [UInt8]
        var code: VisitInputError.Code
        var field: String?
        var note: String
        init(_ body: String, _ code: VisitInputError.Code, _ field: String?, _ note: String) {
            self.body = Array(body.utf8)
            self.code = code
            self.field = field
            self.note = note
        }
        init(bytes: [UInt8], _ code: VisitInputError.Code, _ field: String?, _ note: String) {
            self.body = bytes
            self.code = code
            self.field = field
            self.note = note
        }
        var testDescription: String { note }
    }

    static let eventCases: [Case] = [
        Case("not json", .malformedJSON, nil, "not JSON at all"),
        Case("", .malformedJSON, nil, "empty body"),
        Case(#"{"type":"nearby""#, .malformedJSON, nil, "truncated"),
        Case(#"{"type":"nearby"} x"#, .malformedJSON, nil, "trailing garbage"),
        Case(String(repeating: "[", count: 100_000), .malformedJSON, nil, "nesting bomb"),
        Case(
            bytes: Array(#"{"type":"failed","reason":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8),
            .malformedJSON, nil, "invalid UTF-8"),
        Case(#"{"type":"failed","reason":"\ud800"}"#, .malformedJSON, nil, "lone surrogate"),
        Case("[1,2]", .invalidBody, nil, "array body"),
        Case(#""nearby""#, .invalidBody, nil, "string body"),
        Case("null", .invalidBody, nil, "null body"),
        Case(#"{"type":"nearby","type":"onSite"}"#, .invalidBody, "type", "duplicate key"),
        Case("{}", .missingField, "type", "no type"),
        Case(#"{"type":null}"#, .missingField, "type", "null type"),
        Case(#"{"type":3}"#, .wrongType, "type", "numeric type"),
        Case(#"{"type":"teleported"}"#, .unknownEventType, "type", "unknown type"),
        Case(#"{"type":"scheduled"}"#, .unknownEventType, "type", "scheduled is not posted as an event"),
        Case(#"{"type":"nearby","kilometresAway":"1.2"}"#, .wrongType, "kilometresAway", "distance as a string"),
        Case(#"{"type":"nearby","kilometresAway":true}"#, .wrongType, "kilometresAway", "distance as a boolean"),
        Case(#"{"type":"nearby","kilometresAway":-0.5}"#, .invalidValue, "kilometresAway", "negative distance"),
        Case(#"{"type":"nearby","kilometresAway":1e400}"#, .invalidValue, "kilometresAway", "infinite distance"),
        Case(#"{"type":"nearby","kilometresAway":50000}"#, .invalidValue, "kilometresAway", "beyond the Earth"),
        Case(
            #"{"type":"progress","arrivalWindow":{"start":200,"end":100}}"#, .invalidValue, "arrivalWindow.end",
            "window end before start"),
        Case(
            #"{"type":"progress","arrivalWindow":{"start":"100","end":200}}"#, .wrongType, "arrivalWindow.start",
            "window start as a string"),
        Case(
            #"{"type":"progress","arrivalWindow":{"start":100.5,"end":200}}"#, .invalidValue, "arrivalWindow.start",
            "fractional epoch"),
        Case(
            #"{"type":"progress","arrivalWindow":{"start":-5,"end":200}}"#, .invalidValue, "arrivalWindow.start",
            "negative epoch"),
        Case(
            #"{"type":"progress","arrivalWindow":{"start":100}}"#, .missingField, "arrivalWindow.end",
            "window without end"),
        Case(#"{"type":"progress","arrivalWindow":[100,200]}"#, .wrongType, "arrivalWindow", "window as an array"),
        Case(#"{"type":"progress"}"#, .missingField, "kilometresAway", "progress without a change"),
        Case(#"{"type":"nearby","kilometersAway":1}"#, .unknownField, "kilometersAway", "misspelt field"),
        Case(#"{"type":"failed"}"#, .missingField, "reason", "failed without reason"),
        Case(#"{"type":"failed","reason":""}"#, .invalidValue, "reason", "empty reason"),
        Case(#"{"type":"failed","reason":"  \n "}"#, .invalidValue, "reason", "blank reason"),
        Case(#"{"type":"failed","reason":"a\u0000b"}"#, .invalidValue, "reason", "NUL in reason"),
        Case(
            #"{"type":"failed","reason":"\#(String(repeating: "x", count: 1025))"}"#, .invalidValue, "reason",
            "over-long reason"),
        Case(#"{"type":"cancelled","reason":42}"#, .wrongType, "reason", "numeric reason"),
        Case(#"{"type":"reassigned"}"#, .missingField, "technician", "reassigned without technician"),
        Case(
            #"{"type":"reassigned","technician":{"id":"t-1","name":"","avatarSymbol":"a","vanDescription":"v"}}"#,
            .invalidValue, "technician.name", "empty technician name"),
        Case(
            #"{"type":"reassigned","technician":{"id":"t-1","name":"Kim","avatarSymbol":"a"}}"#,
            .missingField, "technician.vanDescription", "technician without van"),
        Case(#"{"type":"reassigned","technician":"Kim"}"#, .wrongType, "technician", "technician as a string"),
        Case(
            #"{"type":"reassigned","technician":{"id":"t/2","name":"Kim","avatarSymbol":"a","vanDescription":"v"}}"#,
            .invalidId, "technician.id", "slash in the new technician's id"),
        Case(#"{"type":"failed","reason":"Van\u0007 broke"}"#, .invalidValue, "reason", "bell in reason"),
        Case(#"{"type":"failed","reason":"Van\u001b[2J broke"}"#, .invalidValue, "reason", "escape in reason"),
        Case(#"{"type":"failed","reason":"Van\r broke"}"#, .invalidValue, "reason", "carriage return in reason"),
        Case(#"{"type":"failed","reason":"Van\u0085 broke"}"#, .invalidValue, "reason", "C1 control in reason"),
        Case(#"{"type":"cancelled","reason":"Van \u202Ekoorb"}"#, .invalidValue, "reason", "right-to-left override"),
        Case(#"{"type":"cancelled","reason":"Van \u2066x\u2069"}"#, .invalidValue, "reason", "bidi isolate in reason"),
        Case(
            #"{"type":"reassigned","technician":{"id":"t-1","name":"Kim\tLee","avatarSymbol":"a","vanDescription":"v"}}"#,
            .invalidValue, "technician.name", "tab in technician name"),
        Case(
            #"{"type":"reassigned","technician":{"id":"t-1","name":"Kim","avatarSymbol":"a\u202Ab","vanDescription":"v"}}"#,
            .invalidValue, "technician.avatarSymbol", "bidi embedding in avatar symbol"),
        Case(
            #"{"type":"reassigned","technician":{"id":"t-1","name":"Kim","avatarSymbol":"a","vanDescription":"v\nw"}}"#,
            .invalidValue, "technician.vanDescription", "newline in van description"),
        Case(
            #"{"type":"nearby","kilometresAway":1,"x":[\#(Array(repeating: "0", count: 1_001).joined(separator: ","))]}"#,
            .invalidBody, nil, "an array of 1,001 members"),
        Case(
            "{" + (0..<6_500).map { #""k\#($0)":0"# }.joined(separator: ",") + "}", .invalidBody, nil,
            "an object of 6,500 members"),
    ]

    /// Free text may hold tab and newline in `reason` alone, and any printable text (accents, emoji,
    /// right-to-left scripts without bidirectional controls).
    @Test func freeTextKeepsWhatPeopleWrite() throws {
        #expect(
            try VisitEventRequest.parse(Array(#"{"type":"failed","reason":"Van broke:\n\tno parts"}"#.utf8))
                == .failed(reason: "Van broke:\n\tno parts"))
        let text = "Zoë 🚐 שלום"
        let scheduled = try ScheduleVisitRequest.parse(Self.schedule("attributes.customerFirstName", .string(text))) { "x" }
        #expect(scheduled.attributes.customerFirstName == text)
    }

    /// The member cap: 1,000 members in one object or array are read (this body is then refused for its
    /// unknown field), one more is refused with the limit named.
    @Test func theMemberCapNamesTheLimit() {
        let thousand = Array(repeating: "0", count: 1_000).joined(separator: ",")
        for (members, code) in [(thousand, VisitInputError.Code.unknownField), (thousand + ",0", .invalidBody)] {
            do {
                _ = try VisitEventRequest.parse(Array(#"{"type":"nearby","x":[\#(members)]}"#.utf8))
                Issue.record("accepted")
            } catch {
                #expect(error.code == code)
                if code == .invalidBody { #expect(error.message.contains("1000"), "\(error.message)") }
            }
        }
    }

    static let validSchedule = #"""
        {"visitId":"v-1001","customerId":"c-7",
         "attributes":{"customerFirstName":"Alex","serviceAddress":"12 Elm Row","jobSummary":"Boiler check"},
         "technician":{"id":"t-42","name":"Sam","avatarSymbol":"person.crop.circle","vanDescription":"White van, blue stripe"},
         "arrivalWindow":{"start":1790000300,"end":1790000900},"kilometresAway":14.0}
        """#

    /// The valid body with one member replaced (or removed with `nil`), by dotted path.
    static func schedule(_ path: String, _ replacement: JSONValue?) -> [UInt8] {
        var json = try! JSONValue.parse(Array(validSchedule.utf8))
        json.replace(path.split(separator: ".").map(String.init), with: replacement)
        return json.serialized()
    }

    static let scheduleCases: [Case] = [
        Case(bytes: schedule("customerId", nil), .missingField, "customerId", "no customer"),
        Case(bytes: schedule("customerId", .number(7)), .wrongType, "customerId", "numeric customer"),
        Case(bytes: schedule("attributes", nil), .missingField, "attributes", "no attributes"),
        Case(bytes: schedule("attributes.jobSummary", nil), .missingField, "attributes.jobSummary", "no summary"),
        Case(
            bytes: schedule("attributes.customerFirstName", .string("")), .invalidValue,
            "attributes.customerFirstName", "empty first name"),
        Case(
            bytes: schedule("attributes.serviceAddress", .string(String(repeating: "é", count: 600))),
            .invalidValue, "attributes.serviceAddress", "address over 1024 bytes"),
        Case(bytes: schedule("technician.name", .string("")), .invalidValue, "technician.name", "empty technician"),
        Case(bytes: schedule("technician", .string("Sam")), .wrongType, "technician", "technician as a string"),
        Case(bytes: schedule("arrivalWindow", nil), .missingField, "arrivalWindow", "no window"),
        Case(
            bytes: schedule("arrivalWindow.end", .number(1_790_000_000)), .invalidValue, "arrivalWindow.end",
            "window end before start"),
        Case(bytes: schedule("kilometresAway", .string("14.0")), .wrongType, "kilometresAway", "distance string"),
        Case(bytes: schedule("kilometresAway", .number(-1)), .invalidValue, "kilometresAway", "negative distance"),
        Case(bytes: schedule("visitId", .string("v/1001")), .invalidId, "visitId", "slash in visit id"),
        Case(bytes: schedule("visitId", .string("")), .invalidId, "visitId", "empty visit id"),
        Case(
            bytes: schedule("visitId", .string(String(repeating: "v", count: 129))), .invalidId, "visitId",
            "visit id over 128 bytes"),
        Case(bytes: schedule("customerId", .string("Jane Doe")), .invalidId, "customerId", "space in customer id"),
        Case(bytes: schedule("customerId", .string("a@b")), .invalidId, "customerId", "@ in customer id"),
        Case(bytes: schedule("customerId", .string("c\u{202E}7")), .invalidId, "customerId", "bidi override in customer id"),
        Case(bytes: schedule("customerId", .string("c\u{7}7")), .invalidId, "customerId", "bell in customer id"),
        Case(bytes: schedule("customerId", .string("")), .invalidId, "customerId", "empty customer id"),
        Case(bytes: schedule("customerId", .string("é")), .invalidId, "customerId", "non-ASCII customer id"),
        Case(bytes: schedule("technician.id", .string("t 42")), .invalidId, "technician.id", "space in technician id"),
        Case(
            bytes: schedule("technician.id", .string(String(repeating: "t", count: 129))), .invalidId, "technician.id",
            "technician id over 128 bytes"),
        Case(bytes: schedule("technician.id", .number(42)), .wrongType, "technician.id", "numeric technician id"),
        Case(bytes: schedule("visitId", .number(1001)), .wrongType, "visitId", "numeric visit id"),
        Case(bytes: schedule("customerID", .string("c-7")), .unknownField, "customerID", "misspelt field"),
        Case(
            bytes: schedule("attributes.customerFirstName", .string("Al\u{1B}]0;x\u{07}ex")), .invalidValue,
            "attributes.customerFirstName", "escape sequence in first name"),
        Case(
            bytes: schedule("attributes.serviceAddress", .string("12 Elm\nRow")), .invalidValue,
            "attributes.serviceAddress", "newline in address"),
        Case(
            bytes: schedule("attributes.jobSummary", .string("Boiler \u{202E}kcehc")), .invalidValue,
            "attributes.jobSummary", "right-to-left override in summary"),
        Case(
            bytes: schedule("technician.vanDescription", .string("White van\u{2068}")), .invalidValue,
            "technician.vanDescription", "first-strong isolate in van"),
        Case(bytes: schedule("technician.name", .string("Sam\u{7F}")), .invalidValue, "technician.name", "DEL in name"),
        Case("[]", .invalidBody, nil, "array body"),
        Case("{", .malformedJSON, nil, "not JSON"),
    ]

    @Test(arguments: scheduleCases) func scheduleBody(_ testCase: Case) {
        do {
            let scheduled = try ScheduleVisitRequest.parse(testCase.body) { "generated" }
            Issue.record("accepted: \(scheduled)")
        } catch {
            #expect(error.code == testCase.code)
            #expect(error.field == testCase.field)
            if let field = testCase.field { #expect(error.message.contains(field), "\(error.message)") }
        }
    }

    @Test func validBodiesParse() throws {
        let scheduled = try ScheduleVisitRequest.parse(Array(Self.validSchedule.utf8)) { "unused" }
        #expect(VisitEvent.scheduled(scheduled) == TestVisit.scheduled())
        let generated = try ScheduleVisitRequest.parse(Self.schedule("visitId", nil)) { "v-generated" }
        #expect(generated.visitId == "v-generated")
        #expect(generated.attributes.visitId == "v-generated")
        let noDistance = try ScheduleVisitRequest.parse(Self.schedule("kilometresAway", nil)) { "x" }
        #expect(noDistance.kilometresAway == 0)

        let nearby = try VisitEventRequest.parse(
            Array(
                #"{"type": "nearby", "kilometresAway": 1.2, "arrivalWindow": {"start": 1790000300, "end": 1790000900}}"#
                    .utf8))
        #expect(
            nearby
                == .nearby(
                    ArrivalUpdate(
                        kilometresAway: 1.2, arrivalWindow: ArrivalWindow(start: 1_790_000_300, end: 1_790_000_900))))
        #expect(try VisitEventRequest.parse(Array(#"{"type":"onSite","kilometresAway":0.1}"#.utf8)) == .onSite)
        #expect(try VisitEventRequest.parse(Array(#"{"type":"cancelled"}"#.utf8)) == .cancelled(reason: nil))
        #expect(
            try VisitEventRequest.parse(Array(#"{"type":"failed","reason":"Van \"7\" broke"}"#.utf8))
                == .failed(reason: "Van \"7\" broke"))
        #expect(
            try VisitEventRequest.parse(Array(#"{"type":"progress","kilometresAway":0}"#.utf8))
                == .progress(ArrivalUpdate(kilometresAway: 0)))
        #expect(try VisitEventRequest.parse(Data(#"{"type":"enRoute","kilometresAway":null}"#.utf8)) == .enRoute(.none))
    }

    /// The one id grammar (contract §15): 1 to 128 of `A–Z a–z 0–9 . _ ~ -`, the longest accepted whole.
    @Test func idsAtTheGrammarsBoundsParse() throws {
        let longest = String(repeating: "x", count: 127) + "~"
        var body = try JSONValue.parse(Array(Self.validSchedule.utf8))
        for path in ["visitId", "customerId", "technician.id"] {
            body.replace(path.split(separator: ".").map(String.init), with: .string(longest))
        }
        let scheduled = try ScheduleVisitRequest.parse(body.serialized()) { "unused" }
        #expect(scheduled.visitId == longest && scheduled.customerId == longest && scheduled.technician.id == longest)
        let everyCharacter = "AZaz09._~-"
        #expect(IdGrammar.accepts(everyCharacter) && IdGrammar.accepts("a"))
        for refused in ["", String(repeating: "x", count: 129), "a b", "a/b", "a%20b", "a+b", "a:b", "ä", "a\u{0}"] {
            #expect(!IdGrammar.accepts(refused), "\(refused.debugDescription)")
        }
    }

    @Test func longUnknownKeysAreCutShortInMessages() {
        let key = String(repeating: "k", count: 5000)
        do {
            _ = try VisitEventRequest.parse(Array(#"{"type":"nearby","\#(key)":1}"#.utf8))
            Issue.record("accepted an unknown key")
        } catch {
            #expect(error.code == .unknownField)
            #expect(error.message.utf8.count < 100)
        }
    }

    /// Messages name fields (keys the client sent) but never repeat a value, which may be private.
    @Test func messagesNeverEchoValues() {
        let secret = "SECRET-VALUE-123"
        let bodies = [
            #"{"type":"nearby","kilometresAway":"\#(secret)"}"#,
            #"{"type":"\#(secret)"}"#,
            #"{"type":"failed","reason":"\#(secret)\#(String(repeating: "x", count: 2000))"}"#,
        ]
        for body in bodies {
            do {
                _ = try VisitEventRequest.parse(Array(body.utf8))
                Issue.record("accepted \(body)")
            } catch {
                #expect(!error.message.contains("SECRET-VALUE"))
            }
        }
    }
}

extension JSONValue {
    mutating func replace(_ path: [String], with replacement: JSONValue?) {
        guard case .object(var members) = self, let key = path.first else { return }
        let index = members.firstIndex { $0.key == key }
        if path.count == 1 {
            if let index {
                if let replacement { members[index].value = replacement } else { members.remove(at: index) }
            } else if let replacement {
                members.append(JSONMember(key, replacement))
            }
        } else if let index {
            members[index].value.replace(Array(path.dropFirst()), with: replacement)
        }
        self = .object(members)
    }
}
