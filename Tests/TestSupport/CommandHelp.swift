import Foundation

/// Contract §2 for a whole program, walked through its menus: every command answers `--help` with its usage
/// on stdout (beginning `usage: <command>`), nothing on stderr and exit 0; every command that is not a menu
/// answers an unknown option with one line on stderr naming it and exit 2. The commands are read from the
/// program's own menus (a usage beginning `usage: <command> <command>` lists one per indented line), so a new
/// command is checked without touching a test.
public enum CommandHelp {
    /// What a walk found.
    public struct Walk: Sendable {
        /// Every command whose help was read, as typed (`livevisits keys create`).
        public var checked: [String] = []
        /// Each broken promise, one line each; empty when every command kept them all.
        public var problems: [String] = []
    }

    /// Walks the program at `path`, which calls itself `program` in its usage.
    public static func walk(_ path: String, program: String) async throws -> Walk {
        var walk = Walk()
        try await visit(path, program: program, [], into: &walk)
        return walk
    }

    /// The subcommands a menu's usage lists (the first word of each indented line).
    static func entries(of usage: String) -> [String] {
        usage.split(separator: "\n").filter { $0.hasPrefix("  ") }.compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    private static func visit(_ path: String, program: String, _ command: [String], into walk: inout Walk) async throws {
        let outcome = try await Subprocess.run(path, command + ["--help"])
        let typed = ([program] + command).joined(separator: " ")
        walk.checked.append(typed)
        if outcome.status != 0 { walk.problems.append("\(typed) --help: exit \(outcome.status), \(outcome.stderr)") }
        if !outcome.stdout.hasPrefix("usage: \(typed)") {
            walk.problems.append("\(typed) --help printed: \(outcome.stdout.prefix(300))")
        }
        if !outcome.stderr.isEmpty { walk.problems.append("\(typed) --help wrote to stderr: \(outcome.stderr)") }
        if outcome.stdout.hasPrefix("usage: \(typed) <command>") {
            let entries = entries(of: outcome.stdout)
            if entries.isEmpty { walk.problems.append("\(typed) lists no commands") }
            for entry in entries { try await visit(path, program: program, command + [entry], into: &walk) }
        } else {
            let bogus = try await Subprocess.run(path, command + ["--no-such-option"])
            if bogus.status != 2 { walk.problems.append("\(typed) --no-such-option: exit \(bogus.status)") }
            if bogus.stderr.split(separator: "\n").count != 1 || !bogus.stderr.contains("--no-such-option") {
                walk.problems.append("\(typed) --no-such-option: not one line naming the option: \(bogus.stderr)")
            }
        }
    }
}
