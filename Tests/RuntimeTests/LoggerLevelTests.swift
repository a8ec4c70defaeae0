import Runtime
import Testing

/// `LIVEVISITS_LOG_LEVEL`: the documented words (any case) name a level, unset means `info`, anything else is
/// refused with the variable named; `off` writes nothing at all, errors included.
@Suite struct LoggerLevelTests {
    @Test func documentedWordsNameTheirLevel() throws {
        let words: [String: Logger.Level] = [
            "debug": .debug, "info": .info, "warning": .warning, "error": .error, "off": .off, "WARNING": .warning,
        ]
        for (word, level) in words {
            #expect(try Logger.level(in: ["LIVEVISITS_LOG_LEVEL": word]) == level, "\(word)")
        }
        #expect(try Logger.level(in: [:]) == .info)
        #expect(try Logger.level(in: ["LIVEVISITS_LOG_LEVEL": ""]) == .info)
    }

    @Test func anyOtherValueIsRefusedNamingTheVariable() {
        for word in ["warn", "verbose", "none", "0", "info "] {
            #expect(throws: Logger.LevelError.self, "\(word)") { try Logger.level(in: ["LIVEVISITS_LOG_LEVEL": word]) }
            do {
                _ = try Logger.level(in: ["LIVEVISITS_LOG_LEVEL": word])
            } catch {
                #expect(error.message.hasPrefix("LIVEVISITS_LOG_LEVEL must be one of debug, info, warning, error, off"))
            }
        }
    }

    @Test func offWritesNothingAndEveryOtherThresholdWritesItsLevelAndAbove() {
        let written = [Logger.Level.debug, .info, .warning, .error]
        for level in written { #expect(!Logger.writes(level, at: .off), "\(level) written at off") }
        for threshold in written {
            for level in written { #expect(Logger.writes(level, at: threshold) == (level >= threshold)) }
            #expect(!Logger.writes(.off, at: threshold))
        }
    }
}
