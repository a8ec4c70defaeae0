import Foundation
import JSON
import Postgres
import TestSupport
import Testing

@testable import PersonalData

/// The opener's fast path (`sealedSpans`, `opened(_:spans:keys:)`): a document as this project writes JSON
/// is opened in place, byte for byte as the general path (parse, replace, write) opens it, and anything
/// the fast path cannot be sure of is left to the general path.
@Suite(.timeLimit(.minutes(1))) struct PersonalDataOpenerTests {
    typealias Keys = [String: PersonalDataKeys.DataKey]

    /// A customer's data key and three sealed values, one with a name that needs JSON escapes.
    static func sealed() async throws -> (keys: Keys, values: [String], other: String) {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let store = PersonalDataKeys(current: try WrappingKey.temporary())
            return try await pool.withConnection { c in
                let key = try store.dataKey(forCustomer: "c-1", on: c)
                let otherKey = try store.dataKey(forCustomer: "c-2", on: c)
                let values = try [#"Zoë "Z" \ the 2nd"# + "\n", "12 Elm Row", "Boiler check 🔧"].map {
                    try store.seal($0, with: key)
                }
                return ([key.id: key], values, try store.seal("Olga", with: otherKey))
            }
        }
    }

    /// The scan every answer passes: the marker anywhere (first byte, last bytes, after a partial match), in
    /// `Data` and in an array alike; nothing for a partial marker, a body shorter than it, or an empty one.
    @Test func theScanFindsTheMarkerWhereverItIs() {
        let marker = SealedText.prefix
        let found = [
            marker + "k:x", #"{"a":""# + marker + #"k:x"}"#, "xx" + marker, "enc:enc:v" + marker, "e" + marker,
        ]
        let absent = ["", "enc", String(marker.dropLast()), "enc:v2:" + String(repeating: "x", count: 100), #"{"a":"enc:v1"}"#]
        for text in found {
            #expect(PersonalDataOpener.mayHoldSealed(Array(text.utf8)), "\(text)")
            #expect(PersonalDataOpener.mayHoldSealed(Data(text.utf8)), "\(text)")
        }
        for text in absent {
            #expect(!PersonalDataOpener.mayHoldSealed(Array(text.utf8)), "\(text)")
            #expect(!PersonalDataOpener.mayHoldSealed(Data(text.utf8)), "\(text)")
        }
    }

    static func document(_ values: [String], extra: [JSONMember] = []) -> [UInt8] {
        let attributes: [JSONMember] = [
            JSONMember("customerFirstName", .string(values[0])), JSONMember("serviceAddress", .string(values[1])),
            JSONMember("jobSummary", .string(values[2])),
        ]
        return JSONValue.object(
            [JSONMember("visitId", .string("v-1")), JSONMember("attributes", .object(attributes))]
                + [JSONMember("technician", .object([JSONMember("name", .string(#"Sam "\" ü"#))]))] + extra
        ).serialized()
    }

    /// The general path's answer with the same keys.
    static func general(_ bytes: [UInt8], keys: Keys) throws -> [UInt8] {
        let (document, _) = try #require(PersonalDataOpener.sealedIds(bytes))
        return PersonalDataOpener.opened(document, keys: (keys, [:])).bytes
    }

    @Test func aCompactDocumentOpensInPlaceAsTheGeneralPathOpensIt() async throws {
        let (keys, values, _) = try await Self.sealed()
        let bytes = Self.document(values)
        let spans = try #require(PersonalDataOpener.sealedSpans(bytes))
        #expect(spans.count == 3)
        let fast = try #require(PersonalDataOpener.opened(bytes, spans: spans, keys: keys))
        #expect(fast.bytes == (try Self.general(bytes, keys: keys)))
        let text = String(decoding: fast.bytes, as: UTF8.self)
        #expect(text.contains(#""customerFirstName":"Zoë \"Z\" \\ the 2nd\n""#) && !text.contains("enc:v1:"))
    }

    @Test func whatTheFastPathCannotBeSureOfGoesToTheGeneralPath() async throws {
        let (keys, values, other) = try await Self.sealed()
        // A sealed-looking value under a field that is not personal data, or written with whitespace.
        #expect(PersonalDataOpener.sealedSpans(Self.document(values, extra: [JSONMember("note", .string(values[0]))])) == nil)
        let spaced = String(decoding: Self.document(values), as: UTF8.self)
            .replacingOccurrences(of: #""jobSummary":"#, with: #""jobSummary": "#)
        #expect(PersonalDataOpener.sealedSpans(Array(spaced.utf8)) == nil)
        #expect(PersonalDataOpener.sealedSpans(Array(#"{"customerFirstName":"Plain"}"#.utf8)) == nil)
        // A key not at hand (not cached, or erased) and a changed value: the general path decides.
        let mixed = Self.document([values[0], other, values[2]])
        #expect(PersonalDataOpener.opened(mixed, spans: try #require(PersonalDataOpener.sealedSpans(mixed)), keys: keys) == nil)
        // One base64 character changed well before the end, where every bit is used: still well-formed, so it
        // fails authentication (changing the last ones could leave unused bits set, which the parser refuses).
        var tampered = values
        var characters = Array(tampered[1])
        let at = characters.count - 3
        characters[at] = characters[at] == "A" ? "B" : "A"
        tampered[1] = String(characters)
        let changed = Self.document(tampered)
        #expect(
            PersonalDataOpener.opened(changed, spans: try #require(PersonalDataOpener.sealedSpans(changed)), keys: keys) == nil)
    }

    /// A failed visit's `vanDescription` is its sealed reason with the van as fallback: opened while the key
    /// exists, the van once it is gone; a `reason` never reads its fallback (it reads `null`).
    @Test func aSealedVanDescriptionReadsItsFallbackOnceTheKeyIsGone() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let store = PersonalDataKeys(current: try WrappingKey.temporary())
            try await pool.withConnection { c in
                let key = try store.dataKey(forCustomer: "c-f", on: c)
                let sealed = try store.seal("Dog loose", with: key, fallback: "White van: ü")
                let parsed = try #require(SealedText(sealed))
                #expect(parsed.fallback == "White van: ü" && parsed.keyId == key.id)
                #expect(PersonalDataKeys.open(parsed, with: key) == "Dog loose")
                let bytes = JSONValue.object([
                    JSONMember("reason", .string(sealed)),
                    JSONMember("contentState", .object([JSONMember("vanDescription", .string(sealed))])),
                ]).serialized()
                let opened = String(decoding: try Self.general(bytes, keys: [key.id: key]), as: UTF8.self)
                #expect(opened == #"{"reason":"Dog loose","contentState":{"vanDescription":"Dog loose"}}"#)
                let erased = PersonalDataOpener.opened(try #require(PersonalDataOpener.sealedIds(bytes)).0, keys: ([:], [:]))
                #expect(
                    String(decoding: erased.bytes, as: UTF8.self)
                        == #"{"reason":null,"contentState":{"vanDescription":"White van: ü"}}"#)
                #expect(erased.erasedFields == 2)
            }
        }
    }

    /// A sealed `location` holds a JSON object: both paths write the object itself, not a string of it; once
    /// the key is gone it reads `null`.
    @Test func aSealedLocationOpensToItsObjectInBothPaths() async throws {
        try await withTestDatabase(poolSize: 1) { _, pool in
            let store = PersonalDataKeys(current: try WrappingKey.temporary())
            try await pool.withConnection { c in
                let key = try store.dataKey(forCustomer: "c-l", on: c)
                let sealed = try store.seal(#"{"latitude":51.5,"longitude":-0.12}"#, with: key)
                let bytes = JSONValue.object([
                    JSONMember("visitId", .string("v-1")), JSONMember("location", .string(sealed)),
                ]).serialized()
                let expected = #"{"visitId":"v-1","location":{"latitude":51.5,"longitude":-0.12}}"#
                let spans = try #require(PersonalDataOpener.sealedSpans(bytes))
                let fast = try #require(PersonalDataOpener.opened(bytes, spans: spans, keys: [key.id: key]))
                #expect(String(decoding: fast.bytes, as: UTF8.self) == expected)
                #expect(String(decoding: try Self.general(bytes, keys: [key.id: key]), as: UTF8.self) == expected)
                let erased = PersonalDataOpener.opened(try #require(PersonalDataOpener.sealedIds(bytes)).0, keys: ([:], [:]))
                #expect(String(decoding: erased.bytes, as: UTF8.self) == #"{"visitId":"v-1","location":null}"#)
            }
        }
    }
}

/// Answers opened at once, each naming a customer the cache has not met, read their keys together: a read asked
/// for while another is on the wire waits for it and goes with the others in one query, and each answer still
/// gets its own customer's text.
@Suite(.timeLimit(.minutes(1))) struct KeyReadBatchingTests {
    @Test func concurrentAnswersOfUnseenCustomersShareTheirKeyReads() async throws {
        try await withTestDatabase(poolSize: 2) { _, pool in
            let store = PersonalDataKeys(current: try WrappingKey.temporary())
            let names = (0..<64).map { "Name \($0)" }
            let documents = try await pool.withConnection { c in
                try names.enumerated().map { n, name in
                    let key = try store.dataKey(forCustomer: "c-\(n)", on: c)
                    return JSONValue.object([JSONMember("customerFirstName", .string(try store.seal(name, with: key)))])
                        .serialized()
                }
            }
            let cache = PersonalDataKeyCache()
            let opener = PersonalDataOpener(keys: store, cache: cache)
            let opened = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for (n, document) in documents.enumerated() {
                    group.addTask { (n, String(decoding: try await opener.open(document, pool: pool).bytes, as: UTF8.self)) }
                }
                return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
            }
            for (n, name) in names.enumerated() {
                #expect(opened[n] == #"{"customerFirstName":"\#(name)"}"#)
            }
            let queries = cache.queriesMade.load(ordering: .relaxed)
            #expect(queries >= 1 && queries < names.count, "\(queries) key reads for \(names.count) answers")
        }
    }
}

/// The values an opener remembers opened (`OpenedValues`, in `PersonalDataKeyCache`): an answer read again
/// writes what it wrote before without opening anything, and an erasure forgets its key's values the moment
/// it is heard, so that nothing opened with a destroyed key is answered after it.
@Suite(.timeLimit(.minutes(1))) struct OpenedValuesTests {
    @Test func theMemoryForgetsAKeysValuesAndRefusesWhatWasOpenedBeforeAForget() {
        let memory = OpenedValues(timeToLive: .seconds(600), capacity: 10)
        let a = (text: SealedText.prefix + "ka:AAAA", isJSON: false, bytes: Array(#""Erin""#.utf8))
        let b = (text: SealedText.prefix + "kb:BBBB", isJSON: false, bytes: Array(#""Olga""#.utf8))
        let before = memory.generation()
        memory.remember([a, b], readAt: before)
        #expect(memory.values([(a.text, false), (b.text, false), (a.text, true)]) == [a.bytes, b.bytes, nil])

        memory.forget(keyId: "ka")
        #expect(memory.values([(a.text, false), (b.text, false)]) == [nil, b.bytes])
        memory.remember([a], readAt: before)
        #expect(memory.values([(a.text, false)]) == [nil], "opened before the forget: not remembered after it")

        memory.forget(keyId: nil)
        #expect(memory.count == 0)
        let full = (0..<11).map { (text: SealedText.prefix + "k:\($0)", isJSON: false, bytes: [UInt8(ascii: "1")]) }
        memory.remember(Array(full.prefix(8)), readAt: memory.generation())
        memory.remember(Array(full.suffix(3)), readAt: memory.generation())
        #expect(memory.count == 3, "past its capacity the memory starts again")
    }

    @Test func anAnswerReadAgainIsWrittenFromMemoryUntilItsKeyIsErased() async throws {
        try await withTestDatabase(poolSize: 2) { url, pool in
            let store = PersonalDataKeys(current: try WrappingKey.temporary())
            let document = try await pool.withConnection { c in
                let erin = try store.dataKey(forCustomer: "c-1", on: c)
                let olga = try store.dataKey(forCustomer: "c-2", on: c)
                return JSONValue.object([
                    JSONMember("customerFirstName", .string(try store.seal("Erin", with: erin))),
                    JSONMember("jobSummary", .string(try store.seal("Olga's boiler", with: olga))),
                ]).serialized()
            }
            let cache = PersonalDataKeyCache(timeToLive: .seconds(600))
            let opener = PersonalDataOpener(keys: store, cache: cache)
            let listener = cache.listener(url: url)
            let listening = Task { try await listener.run() }
            defer { listening.cancel() }
            try await eventually("the cache listening for erasures") { cache.isActive }

            let plain = #"{"customerFirstName":"Erin","jobSummary":"Olga's boiler"}"#
            #expect(String(decoding: try await opener.open(document, pool: pool).bytes, as: UTF8.self) == plain)
            #expect(cache.openedCount == 0, "keys read from the database: opened by the general path")
            #expect(String(decoding: try await opener.open(document, pool: pool).bytes, as: UTF8.self) == plain)
            #expect(cache.openedCount == 2, "keys cached: both values opened by the fast path and remembered")

            _ = try await pool.withConnection { c in try PersonalDataKeys.destroy(customerId: "c-1", on: c) }
            try await eventually("the erasure heard: the erased customer's value forgotten") { cache.openedCount == 1 }
            let erased = #"{"customerFirstName":null,"jobSummary":"Olga's boiler"}"#
            #expect(String(decoding: try await opener.open(document, pool: pool).bytes, as: UTF8.self) == erased)
        }
    }
}
