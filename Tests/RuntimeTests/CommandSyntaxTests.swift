import Runtime
import Testing

/// The one option parser of `livevisits` and `livevisits-bench`.
@Suite(.timeLimit(.minutes(1))) struct CommandSyntaxTests {
    static let syntax = CommandSyntax(
        command: "tool run", summary: "Runs.",
        options: [
            .value("--role", "ROLE", "who", required: true),
            .value("--limit", "N", "how many"),
            .value("--list", "LIST", "which"),
            .flag("--quiet", "say less"),
        ],
        positionals: "[NAME]", positionalCount: 0...1)

    @Test func valuesFlagsAndPositionalsInEitherSpelling() throws {
        let parsed = try Self.syntax.parse(["--role", "ops", "--limit=7", "--quiet", "alpha"])
        #expect(parsed.value("--role") == "ops")
        #expect(try parsed.integer("--limit", in: 1...10) == 7)
        #expect(parsed.has("--quiet"))
        #expect(!parsed.has("--list"))
        #expect(parsed.positionals == ["alpha"])
        #expect(try parsed.integers("--list", in: 1...100) == nil)
        let list = try Self.syntax.parse(["--role=x", "--list", "1,16,64"])
        #expect(try list.integers("--list", in: 1...100) == [1, 16, 64])
    }

    @Test func doubleDashEndsOptions() throws {
        let parsed = try Self.syntax.parse(["--role", "ops", "--", "--help"])
        #expect(parsed.positionals == ["--help"])
    }

    @Test(arguments: [["--help"], ["-h"], ["--role", "ops", "--help"], ["--bogus", "--help"], ["--help", "--bogus"]])
    func helpAnywhereBeforeDoubleDashAnswersTheUsage(_ arguments: [String]) throws {
        #expect(throws: HelpRequest.self) { try Self.syntax.parse(arguments) }
        do {
            _ = try Self.syntax.parse(arguments)
        } catch let help as HelpRequest {
            #expect(help.usage.hasPrefix("usage: tool run --role ROLE [--limit N] [--list LIST] [--quiet] [NAME]"))
            #expect(help.usage.contains("--limit N"))
            #expect(help.usage.contains("--help"))
        }
    }

    @Test(arguments: [
        (["--role", "ops", "--bogus"], "unknown option '--bogus'"),
        (["--role"], "--role needs a value"),
        (["--role", "--quiet"], "--role needs a value"),
        (["--role=", "x"], "--role needs a value"),
        (["--quiet=yes", "--role", "x"], "--quiet takes no value"),
        (["--limit", "3"], "--role is required"),
        (["--role", "x", "a", "b"], "unexpected argument 'b'"),
    ])
    func mistakesAreOneLineUsageErrorsNamingTheCommand(_ arguments: [String], _ expected: String) throws {
        do {
            _ = try Self.syntax.parse(arguments)
            Issue.record("\(arguments) parsed")
        } catch let error as UsageError {
            #expect(error.message.hasPrefix("tool run: "), "\(error.message)")
            #expect(error.message.contains(expected), "\(error.message)")
            #expect(error.message.hasSuffix("(see 'tool run --help')"))
            #expect(!error.message.contains("\n"))
        }
    }

    @Test func valuesOutOfRangeAreUsageErrors() throws {
        let parsed = try Self.syntax.parse(["--role", "x", "--limit", "11", "--list", "1,,2"])
        #expect(throws: UsageError.self) { try parsed.integer("--limit", in: 1...10) }
        #expect(throws: UsageError.self) { try parsed.integers("--list", in: 1...10) }
        #expect(throws: UsageError.self) { try parsed.choice("--role", among: ["ops", "dispatcher"]) }
        #expect(try parsed.choice("--role", among: ["x"]) == "x")
    }

    enum Shade: String, CaseIterable { case light, dark }

    /// A list of an enumeration's cases by name; a name it lacks, or an empty item, is a usage error naming them.
    @Test func aListOfChoicesTakesOnlyTheirNames() throws {
        let list = try Self.syntax.parse(["--role", "x", "--list", "dark,light,dark"])
        #expect(try list.choices("--list", of: Shade.self) == [.dark, .light, .dark])
        #expect(try list.choices("--limit", of: Shade.self) == nil)
        for bad in ["dark,grey", "dark,,light", ","] {
            let parsed = try Self.syntax.parse(["--role", "x", "--list=\(bad)"])
            #expect(throws: UsageError.self, "\(bad)") { try parsed.choices("--list", of: Shade.self) }
        }
        let grey = try Self.syntax.parse(["--role", "x", "--list", "grey"])
        let error = #expect(throws: UsageError.self) { try grey.choices("--list", of: Shade.self) }
        #expect(
            error?.message.contains("--list takes a comma-separated list of light, dark, not 'grey'") == true,
            "\(error?.message ?? "no error")")
    }

    @Test func aMissingPositionalIsAUsageError() throws {
        let one = CommandSyntax(command: "tool retry", summary: "", positionals: "ID", positionalCount: 1...1)
        #expect(throws: UsageError.self) { try one.parse([]) }
        #expect(try one.parse(["7"]).positionals == ["7"])
    }

    @Test func aMenuPicksTheSubcommandAndAnswersHelp() throws {
        let menu = CommandMenu(command: "tool", entries: [.init("run", "[NAME]", "runs"), .init("stop", "", "stops")])
        let (name, rest) = try menu.select(["run", "--quiet"])
        #expect(name == "run" && rest == ["--quiet"])
        for help in [["help"], ["--help"], ["-h"]] {
            #expect(throws: HelpRequest.self) { try menu.select(help) }
        }
        #expect(throws: UsageError.self) { try menu.select([]) }
        #expect(throws: UsageError.self) { try menu.select(["jump"]) }
        // Each line of the menu names its command first (the docs test reads them so).
        let names = menu.usage.split(separator: "\n").dropFirst().dropLast().compactMap { $0.split(separator: " ").first }
        #expect(names == ["run", "stop"])
    }
}
