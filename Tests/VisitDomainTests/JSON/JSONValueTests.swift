import Foundation
import Testing

@testable import VisitDomain

@Suite struct JSONValueTests {
    @Test func parsesAndWritesRoundTrip() throws {
        let text = #"{"a":[1,-2.5,true,false,null],"b":"x\"y\\z\n\u00e9\ud83d\ude00","c":{},"d":[],"e":1.2,"f":0}"#
        let value = try JSONValue.parse(Array(text.utf8))
        #expect(value["b"] == .string("x\"y\\z\né😀"))
        #expect(value["a"] == .array([.number(1), .number(-2.5), .bool(true), .bool(false), .null]))
        let again = try JSONValue.parse(value.serialized())
        #expect(again == value)
        #expect(String(decoding: JSONValue.number(14.0).serialized(), as: UTF8.self) == "14")
        #expect(String(decoding: JSONValue.number(1.2).serialized(), as: UTF8.self) == "1.2")
        #expect(String(decoding: JSONValue.string("\u{1}").serialized(), as: UTF8.self) == #""\u0001""#)
    }

    @Test func numbersAreNotStringsOrBooleans() {
        #expect(JSONValue.number(1) != .string("1"))
        #expect(JSONValue.number(1) != .bool(true))
        #expect(JSONValue.number(14.0) == .number(14))
    }

    @Test func objectsCompareUnordered() throws {
        #expect(try JSONValue.parse(Array(#"{"a":1,"b":2}"#.utf8)) == JSONValue.parse(Array(#"{"b":2,"a":1}"#.utf8)))
        #expect(try JSONValue.parse(Array(#"{"a":1}"#.utf8)) != JSONValue.parse(Array(#"{"a":1,"b":2}"#.utf8)))
    }

    @Test func refusesWhatIsNotJSON() {
        let bad = [
            "", " ", "{", "[1,]", "{\"a\" 1}", "01", "1.", ".5", "-", "tru", "\"\t\"", "{'a':1}", "nul", "[1]]", "1e",
        ]
        for text in bad {
            #expect(throws: JSONParseError.self, "\(text)") { try JSONValue.parse(Array(text.utf8)) }
        }
        let deep =
            String(repeating: "[", count: JSONValue.maximumDepth + 1)
            + String(repeating: "]", count: JSONValue.maximumDepth + 1)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array(deep.utf8)) }
        let fine =
            String(repeating: "[", count: JSONValue.maximumDepth)
            + String(repeating: "]", count: JSONValue.maximumDepth)
        #expect(throws: Never.self) { try JSONValue.parse(Array(fine.utf8)) }
    }

    @Test func agreesWithFoundationOnNumbers() throws {
        for text in ["0", "-0", "1790000300", "1.2", "14.0", "1e3", "2.5E-3", "123456789012345678", "0.1"] {
            let ours = try JSONValue.parse(Array("[\(text)]".utf8))
            let theirs = try #require(try JSONSerialization.jsonObject(with: Data("[\(text)]".utf8)) as? [NSNumber])
            #expect(ours == .array([.number(theirs[0].doubleValue)]), "\(text)")
        }
    }
}
