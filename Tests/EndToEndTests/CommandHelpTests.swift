import Foundation
import TestSupport
import Testing

/// Every command of `livevisits` and `livevisits-bench` answers `--help` with its usage on stdout and exit
/// 0, and a mistake with one line on stderr and exit 2 (contract §2). The commands are read from the
/// binaries' own menus, so a new command is checked without touching this test.
@Suite(.timeLimit(.minutes(10))) struct CommandHelpTests {
    /// The built product's path, built first when the test run did not.
    /// The subcommands a menu's `--help` lists (the first word of each indented line).
    static func entries(of usage: String) -> [String] {
        usage.split(separator: "\n").filter { $0.hasPrefix("  ") }.compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// Runs `--help` for `path command…` and, when that is a menu, for each entry under it; returns the
    /// commands checked.
    static func checkHelp(_ path: String, program: String, _ command: [String]) async throws -> [String] {
        let outcome = try await Subprocess.run(path, command + ["--help"])
        let typed = ([program] + command).joined(separator: " ")
        #expect(outcome.status == 0, "\(typed) --help: exit \(outcome.status), \(outcome.stderr)")
        #expect(outcome.stdout.hasPrefix("usage: \(typed)"), "\(typed) --help printed: \(outcome.stdout.prefix(300))")
        #expect(outcome.stderr.isEmpty, "\(typed) --help wrote to stderr: \(outcome.stderr)")
        var checked = [typed]
        if outcome.stdout.hasPrefix("usage: \(typed) <command>") {
            let entries = entries(of: outcome.stdout)
            #expect(!entries.isEmpty, "\(typed) lists no commands")
            for entry in entries { checked += try await checkHelp(path, program: program, command + [entry]) }
        } else {
            let bogus = try await Subprocess.run(path, command + ["--no-such-option"])
            #expect(bogus.status == 2, "\(typed) --no-such-option: exit \(bogus.status)")
            #expect(bogus.stderr.split(separator: "\n").count == 1, "\(typed) --no-such-option: \(bogus.stderr)")
            #expect(bogus.stderr.contains("--no-such-option"), "\(typed): \(bogus.stderr)")
        }
        return checked
    }

    @Test func everyLivevisitsCommandAnswersHelp() async throws {
        let checked = try await Self.checkHelp(try await BuiltProduct.livevisits(), program: "livevisits", [])
        for command in [
            "livevisits replay", "livevisits serve", "livevisits keys create", "livevisits outbox retry", "livevisits apns-sim",
            "livevisits demo", "livevisits channels list", "livevisits channels reconcile",
        ] {
            #expect(checked.contains(command), "\(command) was not among the commands checked: \(checked)")
        }
        // The one that used to read --help as a projection's name.
        let replay = try await Subprocess.run(try await BuiltProduct.livevisits(), ["replay", "--help"])
        #expect(!replay.stdout.contains("unknown projection") && !replay.stderr.contains("unknown projection"))
    }

    @Test func everyBenchmarkAnswersHelp() async throws {
        let checked = try await Self.checkHelp(try await BuiltProduct.path("livevisits-bench"), program: "livevisits-bench", [])
        for benchmark in [
            "api", "apns", "append", "channels", "outbox", "personal-data", "pipeline", "prune", "replay", "scale",
        ] {
            #expect(checked.contains("livevisits-bench \(benchmark)"), "\(checked)")
        }
    }

    @Test func theHTTPServerBenchmarkAnswersHelp() async throws {
        let checked = try await Self.checkHelp(try await BuiltProduct.path("http-server-bench"), program: "http-server-bench", [])
        #expect(checked == ["http-server-bench"])
    }

    @Test func noCommandOrAnUnknownOneIsAUsageError() async throws {
        for arguments in [[], ["frobnicate"], ["keys"], ["keys", "frobnicate"]] {
            let outcome = try await Subprocess.run(try await BuiltProduct.livevisits(), arguments)
            #expect(outcome.status == 2, "livevisits \(arguments): exit \(outcome.status)")
            #expect(outcome.stderr.split(separator: "\n").count == 1, "livevisits \(arguments): \(outcome.stderr)")
        }
    }
}
