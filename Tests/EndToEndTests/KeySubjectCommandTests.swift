import Foundation
import TestSupport
import Testing

/// `livevisits keys create --subject ID` takes only ids of the one grammar (contract §15): 1 to 128 of
/// `A–Z a–z 0–9 . _ ~ -`. Anything else is a usage error (exit 2, one line on stderr) before any database work.
@Suite(.timeLimit(.minutes(10))) struct KeySubjectCommandTests {
    @Test func aSubjectOutsideTheGrammarIsAUsageError() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = try await TestDatabase.createMigrated()
        for subject in ["Jane Doe", "a@b", "c\u{202E}7", "", String(repeating: "c", count: 129)] {
            for role in ["customer", "ops"] {
                let outcome = try await Subprocess.run(
                    livevisits, ["keys", "create", "--role", role, "--subject", subject], environment: environment)
                #expect(outcome.status == 2, "\(role) \(subject.debugDescription): exit \(outcome.status) \(outcome.stdout)")
                #expect(
                    outcome.stderr.split(separator: "\n").count == 1 && outcome.stderr.contains("subject"), "\(outcome.stderr)")
                #expect(!outcome.stdout.contains("lv_"), "no key printed")
            }
        }
        let longest = String(repeating: "c", count: 127) + "~"
        let minted = try await Subprocess.run(
            livevisits, ["keys", "create", "--role", "customer", "--subject", longest], environment: environment)
        #expect(minted.status == 0 && minted.stdout.contains("subject: \(longest)"), "\(minted.stderr)")
    }

    /// `--name` is a person's display name: free text, but no control or bidirectional control character, not
    /// blank, at most 128 bytes; anything else is a usage error naming `name` before any database work.
    @Test func aNameThatIsNotPlainTextIsAUsageError() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = try await TestDatabase.createMigrated()
        for name in ["Dana\u{7}", "Dana\nSmith", "\u{202E}anaD", " ", String(repeating: "é", count: 65)] {
            let outcome = try await Subprocess.run(
                livevisits, ["keys", "create", "--role", "dispatcher", "--name", name], environment: environment)
            #expect(outcome.status == 2, "\(name.debugDescription): exit \(outcome.status) \(outcome.stdout)")
            #expect(outcome.stderr.split(separator: "\n").count == 1 && outcome.stderr.contains("name"), "\(outcome.stderr)")
            #expect(!outcome.stdout.contains("lv_"), "no key printed")
        }
        let minted = try await Subprocess.run(
            livevisits, ["keys", "create", "--role", "dispatcher", "--name", "Dana Ñúñez"], environment: environment)
        #expect(minted.status == 0 && minted.stdout.contains("role: dispatcher, name: Dana Ñúñez\n"), "\(minted.stderr)")
    }
}
