import Foundation
import TestSupport
import Testing

/// The docs an operator trusts are checked against the code, so that a change to one without the other
/// fails here: the metrics table of Docs/operations.md against the metrics Sources registers (names and
/// labels), Docs/openapi.yaml against the routes the router declares (and the statuses every such route can
/// answer), the flags of each command in Docs/reference.md against its `--help`, and no page leaning on a
/// document the repository does not hold. (The variables and the relative links are checked by
/// `DocsCommandTests`.)
@Suite(.timeLimit(.minutes(5)))
struct DocsDriftTests {
    static let root = TestDatabase.repositoryRoot

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The Swift files under the given folders of Sources, with their text (comment lines dropped: a comment
    /// may name a metric or a route without registering it).
    static func sources(under folders: [String]) throws -> [(path: String, text: String)] {
        var files: [(String, String)] = []
        for folder in folders {
            let base = root.appendingPathComponent("Sources/\(folder)")
            guard let walker = FileManager.default.enumerator(atPath: base.path) else { continue }
            for case let relative as String in walker where relative.hasSuffix(".swift") {
                let path = "Sources/\(folder)/\(relative)"
                let lines = try text(path).split(separator: "\n", omittingEmptySubsequences: false)
                    .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
                files.append((path, lines.joined(separator: "\n")))
            }
        }
        return files.sorted { $0.0 < $1.0 }
    }

    /// Every match of `pattern` in `text`, as the strings of its capture groups (the whole match first).
    static func matches(_ pattern: String, in text: String) -> [[String]] {
        guard let expression = try? NSRegularExpression(pattern: pattern) else {
            Issue.record("bad pattern \(pattern)")
            return []
        }
        let range = NSRange(text.startIndex..., in: text)
        return expression.matches(in: text, range: range).map { match in
            (0..<match.numberOfRanges).map { index in
                Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
            }
        }
    }

    // MARK: metrics

    /// A metric as the code registers it: its labels, and whether they are known exactly (a literal name in
    /// one `increment`/`set`/`observe` call or one exposition line) or only as the labels of its file (a name
    /// bound to a constant, rendered by a collector of its own).
    struct CodeMetric {
        var labels: Set<String> = []
        var exact = true
        var files: Set<String> = []
    }

    /// The metrics Sources registers (the product's targets, not the benchmarks), by name.
    static func codeMetrics() throws -> [String: CodeMetric] {
        let folders = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
            .filter { !$0.hasSuffix("-bench") }
        let files = try sources(under: folders)
        // LISTEN/NOTIFY channels share the prefix; they are constants named `…channel`.
        var channels: Set<String> = []
        for (_, text) in files {
            for match in matches(#"let (\w+) = "(livevisits_[a-z0-9_]+)""#, in: text)
            where match[1].lowercased().contains("channel") {
                channels.insert(match[2])
            }
        }
        var metrics: [String: CodeMetric] = [:]
        for (path, text) in files {
            var constants: [String: String] = [:]
            for match in matches(#"let (\w+) = "(livevisits_[a-z0-9_]+)""#, in: text) where !channels.contains(match[2]) {
                constants[match[1]] = match[2]
            }
            let fileLabels = Set(labelKeys(in: text))
            for name in Set(constants.values) {
                var metric = metrics[name] ?? CodeMetric()
                metric.exact = false
                metric.labels.formUnion(fileLabels)
                metric.files.insert(path)
                metrics[name] = metric
            }
            // Literal names; a name followed by `(` is an SQL function, not a metric.
            for match in matches(#""(?:# TYPE )?(livevisits_[a-z0-9_]+)(?![a-z0-9_(])"#, in: text) {
                let name = match[1]
                guard !channels.contains(name), !constants.values.contains(name) else { continue }
                var metric = metrics[name] ?? CodeMetric()
                metric.files.insert(path)
                metrics[name] = metric
            }
            for (name, window) in callWindows(in: text) where !channels.contains(name) && !constants.values.contains(name) {
                metrics[name, default: CodeMetric()].labels.formUnion(labelKeys(in: window))
            }
        }
        return metrics
    }

    /// For each literal `"livevisits_…` in `text`: the text from it to the end of its call (where the
    /// parentheses and brackets opened before it close), or of its statement (a line that does not end in
    /// `,` or `:` outside brackets).
    static func callWindows(in text: String) -> [(String, String)] {
        let characters = Array(text)
        var windows: [(String, String)] = []
        for literal in Set(matches(#""livevisits_[a-z0-9_]+(?![a-z0-9_(])"#, in: text).map { $0[0] }) {
            var searchFrom = text.startIndex
            while let found = text.range(of: literal, range: searchFrom..<text.endIndex) {
                let offset = text.distance(from: text.startIndex, to: found.lowerBound)
                var depth = 0
                var end = offset
                while end < characters.count {
                    let character = characters[end]
                    if character == "(" || character == "[" { depth += 1 }
                    if character == ")" || character == "]" { depth -= 1 }
                    if depth < 0 { break }
                    if depth == 0, character == "\n" {
                        let before = characters[offset..<end].last { !$0.isWhitespace }
                        if before != "," && before != ":" { break }
                    }
                    end += 1
                }
                windows.append((String(literal.dropFirst()), String(characters[offset..<end])))
                searchFrom = found.upperBound
            }
        }
        return windows
    }

    /// Label names in code: the keys of `labels: [...]` and `Metrics.render([...])` dictionaries, and the
    /// `name=\"` of exposition lines written by hand (`le`, the histogram's bound, is not a label of ours).
    static func labelKeys(in text: String) -> [String] {
        var keys: [String] = []
        for match in matches(#"(?:labels: |render\()\[([^\]]*)\]"#, in: text) {
            keys += matches(#""(\w+)":"#, in: match[1]).map { $0[1] }
        }
        keys += matches(#"[{,](\w+)=\\""#, in: text).map { $0[1] }.filter { $0 != "le" }
        return keys
    }

    /// The metrics table of Docs/operations.md: each backticked name in a row's first cell, with the labels
    /// in its braces; names that are not one metric (a wildcard) are reported.
    static func documentedMetrics() throws -> [String: Set<String>] {
        let operations = try text("Docs/operations.md")
        let start = try #require(operations.range(of: "\n## Metrics"), "Docs/operations.md has no Metrics section")
        let rest = operations[start.upperBound...]
        let section = rest.range(of: "\n## ").map { rest[..<$0.lowerBound] } ?? rest
        var documented: [String: Set<String>] = [:]
        for line in section.split(separator: "\n") where line.hasPrefix("| `livevisits_") {
            let cell = line.split(separator: "|", omittingEmptySubsequences: true).first.map(String.init) ?? ""
            for piece in cell.components(separatedBy: "`").enumerated().filter({ $0.offset % 2 == 1 }).map(\.element) {
                guard let match = matches(#"^(livevisits_[a-z0-9_]+)(?:\{([a-z_,]*)\})?$"#, in: piece).first else {
                    Issue.record("Docs/operations.md's metrics table names `\(piece)`, which is not one metric")
                    continue
                }
                let labels = match[2].split(separator: ",").map(String.init)
                #expect(documented[match[1]] == nil, "Docs/operations.md lists \(match[1]) twice")
                documented[match[1]] = Set(labels)
            }
        }
        return documented
    }

    @Test func metricsTableMatchesTheMetricsRegistered() throws {
        let code = try Self.codeMetrics()
        let documented = try Self.documentedMetrics()
        // The scan must find what it is meant to find, or an empty scan would pass.
        #expect(code.count > 30, "found only \(code.keys.sorted())")
        #expect(code["livevisits_http_requests_total"]?.labels == ["route", "method", "status"])
        #expect(code["livevisits_outbox_deliveries"]?.labels == ["state"])
        for (name, metric) in code.sorted(by: { $0.key < $1.key }) {
            guard let labels = documented[name] else {
                Issue.record("Docs/operations.md's metrics table lacks \(name) (registered in \(metric.files.sorted()))")
                continue
            }
            if metric.exact {
                #expect(
                    labels == metric.labels, "\(name): the table says {\(labels.sorted())}, the code {\(metric.labels.sorted())}")
            } else {
                #expect(
                    labels.isSubset(of: metric.labels),
                    "\(name): labels \(labels.subtracting(metric.labels).sorted()) not in the code")
            }
        }
        // A metric rendered by a collector of its own: its file's labels are all documented on its metrics.
        let byFile = Dictionary(grouping: code.filter { !$0.value.exact }, by: { $0.value.files.sorted().joined() })
        for (file, metrics) in byFile {
            let fileLabels = metrics.reduce(into: Set<String>()) { $0.formUnion($1.value.labels) }
            let listed = metrics.reduce(into: Set<String>()) { $0.formUnion(documented[$1.key] ?? []) }
            #expect(fileLabels.isSubset(of: listed), "\(file): labels \(fileLabels.subtracting(listed).sorted()) undocumented")
        }
        for name in Set(documented.keys).subtracting(code.keys).sorted() {
            Issue.record("Docs/operations.md's metrics table lists \(name), which no code registers")
        }
    }

    // MARK: routes

    struct Route: Hashable, Comparable, CustomStringConvertible {
        let method: String
        let path: String
        static func < (a: Route, b: Route) -> Bool { (a.path, a.method) < (b.path, b.method) }
        var description: String { "\(method.uppercased()) \(path)" }
    }

    /// The routes `router.add(.method, "template", through: middleware…)` declares, with whether a key is
    /// needed (any middleware: authentication comes first); and the rows of a route table, `(.method, name, …)`
    /// with `let name = "template"`, which a loop adds through `router.add(route.method, route.path, through:`.
    static func declaredRoutes() throws -> [Route: Bool] {
        var routes: [Route: Bool] = [:]
        for (_, text) in try sources(under: ["HTTPAPI", "WebConsole"]) {
            for match in matches(#"router\.add\(\s*\.(\w+),\s*"([^"]+)"(,\s*through:)?"#, in: text) {
                routes[Route(method: match[1], path: match[2])] = !match[3].isEmpty
            }
            guard let table = matches(#"router\.add\(\s*route\.method,\s*route\.path(,\s*through:)?"#, in: text).first
            else { continue }
            var templates: [String: String] = [:]
            for match in matches(#"let (\w+) = "(/[^"]+)""#, in: text) { templates[match[1]] = match[2] }
            for match in matches(#"\(\s*\.(\w+),\s*(\w+),"#, in: text) {
                guard let path = templates[match[2]] else { continue }
                routes[Route(method: match[1], path: path)] = !table[1].isEmpty
            }
        }
        return routes
    }

    /// Docs/openapi.yaml's operations with the statuses each lists.
    static func documentedRoutes() throws -> [Route: Set<String>] {
        var routes: [Route: Set<String>] = [:]
        var path: String?
        var current: Route?
        var inPaths = false
        for line in try text("Docs/openapi.yaml").split(separator: "\n").map(String.init) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            guard inPaths else { continue }
            if !line.hasPrefix(" "), !line.isEmpty { break }
            if let match = matches(#"^  (/\S*):\s*$"#, in: line).first {
                path = match[1]
                current = nil
            } else if let match = matches(#"^    (get|post|put|delete|patch|head):\s*$"#, in: line).first, let path {
                current = Route(method: match[1], path: path)
                routes[current!] = []
            } else if let match = matches(#"^        "(\d{3})":"#, in: line).first, let route = current {
                routes[route, default: []].insert(match[1])
            }
        }
        return routes
    }

    @Test func openAPIDescribesEveryRouteWithItsStatuses() throws {
        let declared = try Self.declaredRoutes()
        let documented = try Self.documentedRoutes()
        #expect(declared.count > 20, "found only \(declared.keys.sorted())")
        #expect(documented.count > 20, "found only \(documented.keys.sorted())")
        for route in Set(declared.keys).subtracting(documented.keys).sorted() {
            Issue.record("Docs/openapi.yaml lacks \(route), which the router declares")
        }
        for route in Set(documented.keys).subtracting(declared.keys).sorted() {
            Issue.record("Docs/openapi.yaml describes \(route), which no router declares")
        }
        for (route, keyed) in declared.sorted(by: { $0.key < $1.key }) {
            guard let statuses = documented[route] else { continue }
            #expect(
                statuses.contains { $0.hasPrefix("2") || $0.hasPrefix("3") }, "\(route) lists no success: \(statuses.sorted())")
            if route.path.contains("{") {
                #expect(statuses.contains("404"), "\(route) takes an id but lists no 404")
            }
            if keyed {
                // A key is checked (401), and counted against its rate and its address's failures (429); the
                // database is used, which a request timeout or an outage turns into 503.
                for status in ["401", "429", "503"] {
                    #expect(statuses.contains(status), "\(route) needs a key but does not list \(status)")
                }
            }
        }
    }

    // MARK: command flags

    /// The leaf commands `livevisits` offers (`keys create`, `outbox list`, …) with the flags their `--help`
    /// prints.
    static func helpFlags() async throws -> [String: Set<String>] {
        let livevisits = try await BuiltProduct.livevisits()
        var flags: [String: Set<String>] = [:]
        func walk(_ command: [String]) async throws {
            let help = try await Subprocess.run(livevisits, command + ["--help"])
            #expect(help.status == 0, "\(command) --help: \(help.stderr)")
            let typed = (["livevisits"] + command).joined(separator: " ")
            if help.stdout.hasPrefix("usage: \(typed) <command>") {
                let entries = help.stdout.split(separator: "\n").filter { $0.hasPrefix("  ") }
                    .compactMap { $0.split(separator: " ").first.map(String.init) }
                for entry in entries where entry != "help" { try await walk(command + [entry]) }
            } else {
                // The options are the lines that start with one; a flag named in a description is not one.
                let options = help.stdout.split(separator: "\n").compactMap { line in
                    matches(#"^  (--[a-z][a-z0-9-]*)"#, in: String(line)).first?[1]
                }
                flags[command.joined(separator: " ")] = Set(options).subtracting(["--help"])
            }
        }
        try await walk([])
        return flags
    }

    static func flags(in text: some StringProtocol) -> [String] {
        matches(#"(?<![\w-])--[a-z][a-z0-9-]*"#, in: String(text)).map { $0[0] }
    }

    @Test func referenceListsEachCommandsFlags() async throws {
        let reference = try Self.text("Docs/reference.md")
        let help = try await Self.helpFlags()
        #expect(help["keys create"]?.contains("--role") == true, "\(help)")
        for (command, flags) in help.sorted(by: { $0.key < $1.key }) {
            // The command's row: its first two cells (the command and its options), not its description.
            let row = reference.split(separator: "\n").first { $0.hasPrefix("| `livevisits \(command)") }
            guard let row else {
                Issue.record("Docs/reference.md has no row for livevisits \(command)")
                continue
            }
            let cells = row.split(separator: "|", omittingEmptySubsequences: true).prefix(2).joined(separator: "|")
            let documented = Set(Self.flags(in: cells))
            #expect(
                documented == flags,
                "livevisits \(command): Docs/reference.md lists \(documented.sorted()), --help \(flags.sorted())")
        }
    }

    // MARK: standing alone

    /// No page leans on a document outside the repository: a contract's sections, the seeds, a person.
    @Test func docsStandAlone() throws {
        let pages = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Docs").path)
            .filter { $0.hasSuffix(".md") || $0.hasSuffix(".yaml") }.map { "Docs/" + $0 }
        for page in ["README.md"] + pages.sorted() {
            let text = try Self.text(page)
            for pattern in [#"§\s*\d"#, #"(?i)\bthe contract\b|\bcontract's"#, #"(?i)\bseeds? `?\d{3}_"#, #"(?i)\bthe lead\b"#] {
                for match in Self.matches(pattern, in: text) {
                    Issue.record("\(page) refers to a document outside the repository: '\(match[0])'")
                }
            }
        }
    }
}
