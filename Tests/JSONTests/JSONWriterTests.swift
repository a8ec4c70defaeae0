import Foundation
import Testing

@testable import JSON

/// The one escaper and number writer: what every body, answer and log value is written with.
@Suite(.timeLimit(.minutes(1))) struct JSONWriterTests {
    @Test func escapesOnlyQuotesBackslashesAndControls() {
        #expect(JSONValue.quoted("plain é😀 / text") == #""plain é😀 / text""#)
        #expect(JSONValue.quoted("a\"b\\c") == #""a\"b\\c""#)
        #expect(JSONValue.quoted("\n\r\t") == #""\n\r\t""#)
        #expect(JSONValue.quoted("\u{0}\u{8}\u{c}\u{1f}\u{7f}") == "\"\\u0000\\u0008\\u000c\\u001f\u{7f}\"")
        #expect(JSONValue.quoted("") == #""""#)
        // Runs between escapes are copied whole, at the start, the middle and the end.
        #expect(JSONValue.quoted("\"abc\"def\"") == #""\"abc\"def\"""#)
    }

    /// Every string survives writing and reading back, and Foundation reads what we write the same way.
    @Test func everyEscapeReadsBack() throws {
        var text = ""
        for scalar in (0..<0x80).compactMap(Unicode.Scalar.init) { text.unicodeScalars.append(scalar) }
        text += "é€😀\u{2028}"
        let written = JSONValue.string(text).serialized()
        #expect(try JSONValue.parse(written) == .string(text))
        let theirs = try JSONSerialization.jsonObject(with: Data(written), options: .fragmentsAllowed) as? String
        #expect(theirs == text)
    }

    @Test func numbersAreWrittenAsBeforeByteForByte() {
        let cases: [(Double, String)] = [
            (0, "0"), (-0.0, "0"), (7, "7"), (-7, "-7"), (10, "10"), (14.0, "14"), (1_790_000_300, "1790000300"),
            (-1_790_000_300, "-1790000300"), (9_007_199_254_740_991, "9007199254740991"),
            (9_007_199_254_740_992, "9007199254740992.0"), (1.2, "1.2"), (0.1, "0.1"), (-2.5, "-2.5"),
            (1e-7, "1e-07"), (.infinity, "null"), (.nan, "null"),
        ]
        for (value, text) in cases {
            #expect(JSONValue.number(value).serializedString() == text, "\(value)")
        }
        for value: Int64 in [0, 1, 9, 10, 99, 100, 12345, -1, -10, 1 << 52, -(1 << 52)] {
            var out: [UInt8] = []
            JSONValue.writeInteger(value, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == String(value))
        }
        var out: [UInt8] = []
        JSONValue.writeInteger(.min, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == String(Int64.min))
    }

    @Test func membersKeepTheirOrder() {
        let value: JSONValue = ["z": 1, "a": [true, false, "x"], "m": ["n": 1.5], "e": [], "o": [:]]
        #expect(value.serializedString() == #"{"z":1,"a":[true,false,"x"],"m":{"n":1.5},"e":[],"o":{}}"#)
        #expect(value.objectMembers?.map(\.key) == ["z", "a", "m", "e", "o"])
    }

    @Test func indentedReadsBackEqual() throws {
        let value: JSONValue = ["a": [1, ["b": .null]], "c": "d", "e": [], "f": [:]]
        let text = String(decoding: value.indentedSerialized(), as: UTF8.self)
        #expect(
            text
                == "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": \"d\",\n  \"e\": [],\n  \"f\": {}\n}\n"
        )
        #expect(try JSONValue.parse(Array(text.utf8)) == value)
    }
}
