import Foundation
import Runtime
import Testing

@testable import VisitDomain

/// Mutated and truncated bodies never crash the parser, and each outcome is checked against an independent
/// reading of the same bytes (Foundation's JSON parser): a body it cannot read is `malformedJSON`, one it
/// reads is never `malformedJSON`; a refusal names a field that is (or, when missing, is not) in the body.
@Suite(.timeLimit(.minutes(2))) struct MutatedInputTests {
    static let seeds: [String] = [
        BadInputTests.validSchedule,
        #"{"type":"nearby","kilometresAway":1.2,"arrivalWindow":{"start":1790000300,"end":1790000900}}"#,
        #"{"type":"failed","reason":"Van \"7\" broke \u00e9\ud83d\ude00"}"#,
        #"{"type":"reassigned","technician":{"id":"t","name":"Kim","avatarSymbol":"p","vanDescription":"v"}}"#,
    ]

    @Test func mutatedBodiesAreParsedOrRefused() throws {
        var generator = SplitMix64(seed: 20_261_129)  // Runtime's: seeded, so a failure is reproducible
        let interesting: [UInt8] = Array(#"{}[]",:\u0"e-.9tfn"#.utf8) + [0x00, 0x80, 0xC3, 0xFF, 0xED, 0xA0]
        var outcomes = (accepted: 0, malformed: 0, refused: 0)
        for _ in 0..<4_000 {
            let seedIndex = Int.random(in: 0..<Self.seeds.count, using: &generator)
            var body = Array(Self.seeds[seedIndex].utf8)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = Int.random(in: 0..<body.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: body[position] = interesting.randomElement(using: &generator)!
                case 1: body.remove(at: position)
                case 2: body.insert(interesting.randomElement(using: &generator)!, at: position)
                default: body = Array(body.prefix(position))
                }
                if body.isEmpty { body = [0x7B] }
            }
            let oracle = Self.independentlyParsed(body)
            let note = String(decoding: body, as: UTF8.self)
            do {
                if seedIndex == 0 {
                    _ = try ScheduleVisitRequest.parse(body) { "generated" }
                } else {
                    _ = try VisitEventRequest.parse(body)
                }
                outcomes.accepted += 1
                let object = oracle as? [String: Any]
                #expect(object != nil, "accepted a body that is not a JSON object: \(note)")
                if seedIndex != 0 { #expect(object?["type"] is String, "accepted an event without a type: \(note)") }
            } catch {
                #expect(error.message.isEmpty == false)
                if error.code == .malformedJSON {
                    outcomes.malformed += 1
                    #expect(oracle == nil || Self.foundationIsLenient(body), "valid JSON called malformed: \(note)")
                    continue
                }
                outcomes.refused += 1
                if oracle == nil, error.code == .invalidValue, Self.hasHugeExponent(body) { continue }
                #expect(oracle != nil, "\(error.code) for a body that is not JSON: \(note)")
                guard let object = oracle as? [String: Any] else {
                    #expect(error.code == .invalidBody, "\(error.code) for a body that is not an object: \(note)")
                    continue
                }
                switch error.code {
                case .missingField:
                    let field = try #require(error.field, "missing_field names no field: \(note)")
                    #expect(Self.value(at: field, in: object) == nil, "\(field) called missing but present: \(note)")
                case .wrongType, .invalidValue, .unknownField, .unknownEventType:
                    let field = try #require(error.field, "\(error.code) names no field: \(note)")
                    #expect(Self.value(at: field, in: object) != nil, "\(error.code) names \(field), absent from: \(note)")
                default:
                    break
                }
            }
        }
        #expect(outcomes.accepted + outcomes.malformed + outcomes.refused == 4_000)
        #expect(outcomes.malformed > 0)
        #expect(outcomes.refused > 0)
    }

    /// The body as Foundation's JSON parser reads it (nil: not JSON).
    static func independentlyParsed(_ body: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
    }

    /// What the domain's parser refuses on purpose (RFC 8259, Docs/domain.md) and Foundation's accepts:
    /// lone surrogates, duplicate keys, a trailing comma.
    static func foundationIsLenient(_ body: [UInt8]) -> Bool {
        let text = String(decoding: body, as: UTF8.self).lowercased()
        let compact = text.filter { !$0.isWhitespace }
        if compact.contains(",}") || compact.contains(",]") { return true }
        if text.contains("\\ud8") || text.contains("\\ud9") || text.contains("\\uda") || text.contains("\\udb")
            || text.contains("\\udc") || text.contains("\\udd") || text.contains("\\ude") || text.contains("\\udf")
        {
            return true
        }
        // A duplicate key: the same quoted key twice in one object is rare enough to accept any repeat.
        let keys = text.components(separatedBy: "\"").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        return Set(keys).count < keys.count
    }

    /// A number JSON allows and Foundation cannot hold (`17900e0900`): the domain reads it as out of range.
    static func hasHugeExponent(_ body: [UInt8]) -> Bool {
        String(decoding: body, as: UTF8.self).lowercased().contains(/[0-9]e[+]?[0-9]{3,}/)
    }

    /// The value at a dotted field path (`technician.name`; a key may itself hold a dot), or nil when
    /// absent or null.
    static func value(at path: String, in object: [String: Any]) -> Any? {
        if let value = object[path] { return value is NSNull ? nil : value }
        for (key, value) in object where path.hasPrefix(key + ".") {
            if let inner = value as? [String: Any], let found = Self.value(at: String(path.dropFirst(key.count + 1)), in: inner) {
                return found
            }
        }
        return nil
    }
}
