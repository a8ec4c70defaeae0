/// A usage mistake on the command line: one line on stderr, exit code 2 (contract §2).
public struct UsageError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// `--help` (or `-h`) was given: the command's usage goes to stdout and the process exits 0. Thrown by
/// `CommandSyntax.parse` and `CommandMenu.select`, so every command answers `--help` the same way.
public struct HelpRequest: Error, Sendable {
    public let usage: String
    public init(usage: String) { self.usage = usage }
}

/// One command's syntax: its options and positional arguments, parsed from `argv` in one way for every
/// command of `livevisits` and `livevisits-bench`. Options are `--name value`, `--name=value` or a bare
/// `--flag`; `--` ends the options; `--help`/`-h` anywhere before it throws `HelpRequest`; an unknown
/// option, a missing value or a wrong number of positionals throws `UsageError` naming the command.
public struct CommandSyntax: Sendable {
    /// One option: a flag when `valueName` is nil, else it takes one value.
    public struct Option: Sendable {
        public let name: String
        public let valueName: String?
        public let help: String
        /// A value option that must be given (a usage error otherwise).
        public let required: Bool

        /// `--name` alone.
        public static func flag(_ name: String, _ help: String) -> Option {
            Option(name: name, valueName: nil, help: help, required: false)
        }

        /// `--name VALUE` (or `--name=VALUE`).
        public static func value(_ name: String, _ valueName: String, _ help: String, required: Bool = false) -> Option {
            Option(name: name, valueName: valueName, help: help, required: required)
        }

        var synopsis: String { valueName.map { "\(name) \($0)" } ?? name }
    }

    /// The command as typed, e.g. `livevisits replay`.
    public let command: String
    /// What it does, one line.
    public let summary: String
    public let options: [Option]
    /// How the positionals read in the usage line, e.g. `[PROJECTION]`.
    public let positionalSynopsis: String
    /// How many positionals are accepted.
    public let positionalCount: ClosedRange<Int>
    /// Extra lines at the end of the help (defaults, examples).
    public let details: String

    public init(
        command: String, summary: String, options: [Option] = [], positionals: String = "",
        positionalCount: ClosedRange<Int> = 0...0, details: String = ""
    ) {
        self.command = command
        self.summary = summary
        self.options = options
        self.positionalSynopsis = positionals
        self.positionalCount = positionalCount
        self.details = details
    }

    /// The one-line synopsis: `usage: livevisits replay [PROJECTION]`.
    public var synopsis: String {
        let optionPart = options.map { $0.required ? $0.synopsis : "[\($0.synopsis)]" }.joined(separator: " ")
        return ["usage: \(command)", optionPart, positionalSynopsis].filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// What `--help` prints.
    public var usage: String {
        var lines = [synopsis, "  \(summary)"]
        let width = options.map(\.synopsis.count).max() ?? 0
        for option in options {
            lines.append("  " + option.synopsis.padding(toLength: width + 2) + option.help)
        }
        lines.append("  " + "--help".padding(toLength: max(width, 6) + 2) + "print this help")
        if !details.isEmpty { lines += details.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 } }
        return lines.joined(separator: "\n")
    }

    /// Parses the arguments that follow the command's name.
    public func parse(_ arguments: [String]) throws -> ParsedArguments {
        if arguments.prefix(while: { $0 != "--" }).contains(where: { $0 == "--help" || $0 == "-h" }) {
            throw HelpRequest(usage: usage)
        }
        var flags: Set<String> = []
        var values: [String: String] = [:]
        var positionals: [String] = []
        var rest = arguments[...]
        var optionsEnded = false
        while let argument = rest.popFirst() {
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = argument
            var inline: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw mistake("unknown option '\(name)'")
            }
            guard let valueName = option.valueName else {
                if inline != nil { throw mistake("\(name) takes no value") }
                flags.insert(name)
                continue
            }
            if let inline {
                guard !inline.isEmpty else { throw mistake("\(name) needs a value (\(valueName))") }
                values[name] = inline
            } else {
                guard let next = rest.popFirst(), !next.isEmpty, !next.hasPrefix("--") else {
                    throw mistake("\(name) needs a value (\(valueName))")
                }
                values[name] = next
            }
        }
        for option in options where option.required && values[option.name] == nil {
            throw mistake("\(option.name) is required")
        }
        guard positionalCount.contains(positionals.count) else {
            if positionals.count > positionalCount.upperBound, let extra = positionals.dropFirst(positionalCount.upperBound).first
            {
                throw mistake("unexpected argument '\(extra)'")
            }
            throw mistake("missing \(positionalSynopsis.isEmpty ? "arguments" : positionalSynopsis)")
        }
        return ParsedArguments(syntax: self, flags: flags, values: values, positionals: positionals)
    }

    /// A usage error of this command, on one line, pointing at its `--help`.
    public func mistake(_ problem: String) -> UsageError {
        UsageError("\(command): \(problem) (see '\(command) --help')")
    }
}

/// What `CommandSyntax.parse` found.
public struct ParsedArguments: Sendable {
    public let syntax: CommandSyntax
    public let flags: Set<String>
    public let values: [String: String]
    public let positionals: [String]

    /// Whether the flag was given.
    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The option's value, nil when not given.
    public func value(_ name: String) -> String? { values[name] }

    /// The option's value converted by `convert`; a value it refuses is a usage error saying `expected`.
    public func value<T>(_ name: String, expected: String, _ convert: (String) -> T?) throws -> T? {
        guard let text = values[name] else { return nil }
        guard let value = convert(text) else { throw syntax.mistake("\(name) takes \(expected), not '\(text)'") }
        return value
    }

    /// A whole number within `range`, nil when not given.
    public func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        try value(name, expected: Self.describe(range)) { Int($0).flatMap { range.contains($0) ? $0 : nil } }
    }

    /// A comma-separated list of whole numbers within `range` (`1,16,64`), nil when not given.
    public func integers(_ name: String, in range: ClosedRange<Int>) throws -> [Int]? {
        try value(name, expected: "a comma-separated list of \(Self.describe(range))") { text in
            let items = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
            guard !items.isEmpty, items.allSatisfy({ $0.map(range.contains) == true }) else { return nil }
            return items.compactMap { $0 }
        }
    }

    /// A number (not necessarily whole) above zero, nil when not given.
    public func positiveNumber(_ name: String) throws -> Double? {
        try value(name, expected: "a number above 0") { Double($0).flatMap { $0 > 0 && $0.isFinite ? $0 : nil } }
    }

    /// One of `choices`, nil when not given.
    public func choice(_ name: String, among choices: [String]) throws -> String? {
        try value(name, expected: "one of \(choices.joined(separator: ", "))") { choices.contains($0) ? $0 : nil }
    }

    /// A comma-separated list of `T`'s cases by name (`uniform,zipf`), nil when not given.
    public func choices<T: CaseIterable & RawRepresentable>(_ name: String, of _: T.Type) throws -> [T]?
    where T.RawValue == String {
        let names = T.allCases.map(\.rawValue).joined(separator: ", ")
        return try value(name, expected: "a comma-separated list of \(names)") { text in
            let items = text.split(separator: ",", omittingEmptySubsequences: false).map { T(rawValue: String($0)) }
            guard !items.isEmpty, items.allSatisfy({ $0 != nil }) else { return nil }
            return items.compactMap { $0 }
        }
    }

    private static func describe(_ range: ClosedRange<Int>) -> String {
        range.upperBound == Int.max
            ? "a whole number of at least \(range.lowerBound)"
            : "a whole number from \(range.lowerBound) to \(range.upperBound)"
    }
}

/// A command made of subcommands (`livevisits`, `livevisits keys`, `livevisits-bench`): picks the one
/// named first. No argument is a usage error (exit 2) that shows the menu; `help`, `--help` and `-h` throw
/// `HelpRequest` with it.
public struct CommandMenu: Sendable {
    public struct Entry: Sendable {
        public let name: String
        public let synopsis: String
        public let summary: String
        public init(_ name: String, _ synopsis: String, _ summary: String) {
            self.name = name
            self.synopsis = synopsis
            self.summary = summary
        }
    }

    public let command: String
    public let entries: [Entry]

    public init(command: String, entries: [Entry]) {
        self.command = command
        self.entries = entries
    }

    /// What `--help` prints: one line per subcommand, its name first.
    public var usage: String {
        let left = entries.map { ($0.name + " " + $0.synopsis).trimmingTrailingSpaces }
        let width = left.map(\.count).max() ?? 0
        let lines = zip(left, entries).map { "  " + $0.padding(toLength: width + 2) + $1.summary }
        return (["usage: \(command) <command> [options]"] + lines + ["run '\(command) <command> --help' for a command's options"])
            .joined(separator: "\n")
    }

    /// The subcommand named first and the arguments after it.
    public func select(_ arguments: [String]) throws -> (name: String, arguments: [String]) {
        guard let first = arguments.first else {
            throw UsageError(
                "\(command): missing command; one of \(entries.map(\.name).joined(separator: ", ")) (see '\(command) --help')")
        }
        if first == "help" || first == "--help" || first == "-h" { throw HelpRequest(usage: usage) }
        guard entries.contains(where: { $0.name == first }) else {
            throw UsageError(
                "\(command): unknown command '\(first)'; one of \(entries.map(\.name).joined(separator: ", ")) (see '\(command) --help')"
            )
        }
        return (first, Array(arguments.dropFirst()))
    }
}

extension String {
    fileprivate func padding(toLength length: Int) -> String {
        count >= length ? self + " " : self + String(repeating: " ", count: length - count)
    }

    fileprivate var trimmingTrailingSpaces: String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
