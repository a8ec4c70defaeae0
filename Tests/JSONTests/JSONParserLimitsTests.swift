import Runtime
import TestSupportCore
import Testing

@testable import JSON

/// What the parser promises about size: time linear in the body (the duplicate-key check included), and,
/// when asked, at most so many members per object or array.
@Suite(.timeLimit(.minutes(1))) struct JSONParserLimitsTests {
    /// `{"k0":0,"k1":0,…}` with `count` members; with `repeating`, the last key repeats that member's.
    static func object(_ count: Int, repeating: Int? = nil) -> [UInt8] {
        var text = "{"
        for i in 0..<count {
            if i > 0 { text += "," }
            let key = (i == count - 1 ? repeating : nil) ?? i
            text += #""k\#(key)":\#(i)"#
        }
        return Array((text + "}").utf8)
    }

    /// The duplicate-key check holds past the few members compared one by one: a repeat anywhere is found,
    /// with its offset, and keys that only share a prefix, or repeat in another object, are not repeats.
    @Test(arguments: [2, 8, 9, 10, 17, 1_000, 6_500])
    func findsARepeatedKeyInAnObjectOfAnySize(_ count: Int) throws {
        for repeated in Set([0, (count - 1) / 2, count - 2]) {
            let body = Self.object(count, repeating: repeated)
            do {
                _ = try JSONValue.parse(body)
                Issue.record("\(count) members, k\(repeated) twice: accepted")
            } catch {
                #expect(error.kind == .duplicateKey("k\(repeated)"), "\(error)")
                #expect(body[error.offset] == UInt8(ascii: "\""))
            }
        }
        let distinct = try JSONValue.parse(Self.object(count))
        #expect(distinct.objectMembers?.count == count)
        #expect(distinct["k\(count - 1)"] == .number(Double(count - 1)))
        let nested = try JSONValue.parse(Array(#"{"a":\#(String(decoding: Self.object(count), as: UTF8.self)),"k0":1}"#.utf8))
        #expect(nested["k0"] == .number(1))
    }

    /// 6,500 keys in one object (the body that took 1.1 s when the check compared every pair) and 300,000 in
    /// another parse within a minute, on a thread of their own; a pairwise check would take minutes on the
    /// second, and the test would give up on it.
    @Test func parsesAnObjectOfHundredsOfThousandsOfKeysInLinearTime() async throws {
        #expect(try JSONValue.parse(Self.object(6_500)).objectMembers?.count == 6_500)
        let parsed = await withDeadline(seconds: 60) {
            try? await onOwnThread { () throws -> (Int?, JSONParseError.Kind?) in
                let distinct = try JSONValue.parse(Self.object(300_000)).objectMembers?.count
                do {
                    _ = try JSONValue.parse(Self.object(300_000, repeating: 299_997))
                    return (distinct, nil)
                } catch let error as JSONParseError {
                    return (distinct, error.kind)
                }
            }
        }
        let (count, repeated) = try #require(parsed ?? nil, "300,000 keys not parsed within 60 s: the check is not linear")
        #expect(count == 300_000)
        #expect(repeated == .duplicateKey("k299997"))
    }

    /// With `maximumMembers`, the limit itself is accepted and one more member refused, in objects and
    /// arrays, at any depth; without it, nothing is counted (what the project stored itself is not capped).
    @Test func capsMembersPerObjectAndArrayWhenAsked() throws {
        let limit = JSONValue.requestMemberLimit
        let array = { (n: Int) in Array(("[" + Array(repeating: "1", count: n).joined(separator: ",") + "]").utf8) }
        #expect(try JSONValue.parse(array(limit), maximumMembers: limit).arrayElements?.count == limit)
        #expect(try JSONValue.parse(Self.object(limit), maximumMembers: limit).objectMembers?.count == limit)
        for body in [
            array(limit + 1), Self.object(limit + 1),
            Array(#"{"a":[\#(String(decoding: array(limit + 1), as: UTF8.self))]}"#.utf8),
        ] {
            do {
                _ = try JSONValue.parse(body, maximumMembers: limit)
                Issue.record("accepted \(limit + 1) members")
            } catch {
                #expect(error.kind == .tooManyMembers(limit))
                #expect(error.reason.contains("\(limit)"))
            }
        }
        #expect(try JSONValue.parse(array(limit + 1)).arrayElements?.count == limit + 1)
    }
}
