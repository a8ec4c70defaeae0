import Foundation
import TestSupport
import Testing

/// Every command of `livevisits` answers `--help` with its usage on stdout and exit 0, and a mistake with one
/// line on stderr and exit 2 (contract §2; `CommandHelp` walks the binary's own menus, so a new command is
/// checked without touching this test). The benchmarks' commands are checked in their own package.
@Suite(.timeLimit(.minutes(10))) struct CommandHelpTests {
    @Test func everyLivevisitsCommandAnswersHelp() async throws {
        let walk = try await CommandHelp.walk(try await BuiltProduct.livevisits(), program: "livevisits")
        #expect(walk.problems.isEmpty, "\(walk.problems.joined(separator: "\n"))")
        for command in [
            "livevisits replay", "livevisits serve", "livevisits keys create", "livevisits outbox retry", "livevisits apns-sim",
            "livevisits demo", "livevisits channels list", "livevisits channels reconcile",
        ] {
            #expect(walk.checked.contains(command), "\(command) was not among the commands checked: \(walk.checked)")
        }
        // The one that used to read --help as a projection's name.
        let replay = try await Subprocess.run(try await BuiltProduct.livevisits(), ["replay", "--help"])
        #expect(!replay.stdout.contains("unknown projection") && !replay.stderr.contains("unknown projection"))
    }

    @Test func noCommandOrAnUnknownOneIsAUsageError() async throws {
        for arguments in [[], ["frobnicate"], ["keys"], ["keys", "frobnicate"]] {
            let outcome = try await Subprocess.run(try await BuiltProduct.livevisits(), arguments)
            #expect(outcome.status == 2, "livevisits \(arguments): exit \(outcome.status)")
            #expect(outcome.stderr.split(separator: "\n").count == 1, "livevisits \(arguments): \(outcome.stderr)")
        }
    }
}
