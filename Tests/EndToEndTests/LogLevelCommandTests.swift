import Foundation
import TestSupport
import Testing

/// A misspelt `LIVEVISITS_LOG_LEVEL` stops every command before it does anything, with exit 2 and one line
/// naming the variable, instead of silently logging at `info`.
@Suite(.timeLimit(.minutes(5))) struct LogLevelCommandTests {
    @Test func aMalformedLevelIsAConfigurationError() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_LOG_LEVEL"] = "loud"
        // No database is needed to be refused: the level is checked before any variable or connection.
        environment["LIVEVISITS_DATABASE_URL"] = "postgresql://127.0.0.1:1/none"
        for command in [["migrate"], ["prune"], ["outbox", "list"]] {
            let outcome = try await Subprocess.run(try await BuiltProduct.livevisits(), command, environment: environment)
            #expect(outcome.status == 2, "\(command): exit \(outcome.status), \(outcome.stderr)")
            let lines = outcome.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(command): \(outcome.stderr)")
            #expect(lines.first?.hasPrefix("livevisits: LIVEVISITS_LOG_LEVEL must be one of") == true, "\(outcome.stderr)")
            #expect(outcome.stderr.contains("\"loud\""))
        }
        environment["LIVEVISITS_LOG_LEVEL"] = "off"
        let help = try await Subprocess.run(
            try await BuiltProduct.livevisits(), ["outbox", "list", "--help"], environment: environment)
        #expect(help.status == 0, "\(help.stderr)")
    }
}
