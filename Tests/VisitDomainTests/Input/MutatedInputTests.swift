import Runtime
import Testing

@testable import VisitDomain

/// Mutated and truncated bodies never crash the parser: each one parses or is a typed error.
@Suite struct MutatedInputTests {
    static let seeds: [String] = [
        BadInputTests.validSchedule,
        #"{"type":"nearby","kilometresAway":1.2,"arrivalWindow":{"start":1790000300,"end":1790000900}}"#,
        #"{"type":"failed","reason":"Van \"7\" broke \u00e9\ud83d\ude00"}"#,
        #"{"type":"reassigned","technician":{"id":"t","name":"Kim","avatarSymbol":"p","vanDescription":"v"}}"#,
    ]

    @Test func mutatedBodiesAreParsedOrRefused() {
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
            do {
                if seedIndex == 0 {
                    _ = try ScheduleVisitRequest.parse(body) { "generated" }
                } else {
                    _ = try VisitEventRequest.parse(body)
                }
                outcomes.accepted += 1
            } catch {
                if error.code == .malformedJSON { outcomes.malformed += 1 } else { outcomes.refused += 1 }
                #expect(error.message.isEmpty == false)
            }
        }
        #expect(outcomes.accepted + outcomes.malformed + outcomes.refused == 4_000)
        #expect(outcomes.malformed > 0)
        #expect(outcomes.refused > 0)
    }
}
