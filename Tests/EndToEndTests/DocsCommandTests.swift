import Foundation
import TestSupport
import Testing

/// The commands README.md and the Docs show must stay true: every `livevisits <command>` they name is a
/// real command, every `scripts/…` exists, and the operator commands that can run here do run (against a
/// scratch database). Docs/reference.md lists every command and every variable the code reads, and
/// nothing else. The docs link only to what a clone of the repository holds. A doc that drifts from the
/// code fails here.
@Suite(.timeLimit(.minutes(10)))
struct DocsCommandTests {
    static let root = TestDatabase.repositoryRoot
    /// README.md and every Markdown page in Docs/.
    static let documents: [String] = {
        let pages = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Docs").path)) ?? []
        return ["README.md"] + pages.filter { $0.hasSuffix(".md") }.sorted().map { "Docs/" + $0 }
    }()

    static func text(_ document: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
    }

    /// Every `word` following `prefix` in the text.
    static func words(after prefix: String, in text: String) -> [String] {
        text.components(separatedBy: prefix).dropFirst().map { rest in
            String(rest.prefix { $0.isLowercase || $0.isNumber || $0 == "-" || $0 == "_" })
        }
    }

    /// The commands `livevisits help` lists (the first word of each indented line).
    static func commands() async throws -> Set<String> {
        let help = try await Subprocess.run(try await BuiltProduct.livevisits(), ["help"])
        #expect(help.status == 0)
        // The menu's entries are the indented lines; the usage line and the closing hint are not commands.
        let entries = help.stdout.split(separator: "\n").filter { $0.hasPrefix("  ") }
        let words = entries.compactMap { $0.split(separator: " ").first.map(String.init) }
        return Set(words.filter { $0.allSatisfy { $0.isLowercase || $0 == "-" } } + ["help"])
    }

    @Test func namedCommandsAndScriptsExist() async throws {
        let commands = try await Self.commands()
        #expect(commands.isSuperset(of: ["migrate", "serve", "worker", "replay", "keys", "outbox", "apns-sim", "demo"]))
        for document in Self.documents {
            let text = try Self.text(document)
            for command in Self.words(after: "livevisits ", in: text) where !command.isEmpty {
                #expect(commands.contains(command), "\(document) names 'livevisits \(command)', which does not exist")
            }
            for script in Self.words(after: "scripts/", in: text) where !script.isEmpty {
                let path = Self.root.appendingPathComponent("scripts/\(script)").path
                #expect(FileManager.default.isExecutableFile(atPath: path), "\(document) names scripts/\(script)")
            }
        }
        #expect(try Self.text("scripts/run").split(separator: "\n").last?.hasSuffix("livevisits demo \"$@\"") == true)
    }

    /// The runbook's commands that need only a database, run as written.
    @Test func runbookCommandsRun() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let operations = try Self.text("Docs/operations.md")
        let url = try await TestDatabase.createMigrated()
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = url
        environment["LIVEVISITS_PROJECTIONS_DIR"] = Self.root.appendingPathComponent("Projections").path
        environment["LIVEVISITS_MIGRATIONS_DIR"] = Self.root.appendingPathComponent("Migrations").path
        let runbook: [(String, String)] = [
            ("livevisits migrate", "migrations are current"),
            ("livevisits keys create --role dispatcher", "key id: "),
            ("livevisits replay visits", ""),
            ("livevisits outbox list --state dead", ""),
        ]
        for (command, expected) in runbook {
            #expect(operations.contains(command), "Docs/operations.md no longer shows '\(command)'")
            let arguments = command.split(separator: " ").dropFirst().map(String.init)
            let outcome = try await Subprocess.run(livevisits, arguments, environment: environment)
            #expect(outcome.status == 0, "\(command): \(outcome.stderr)")
            #expect(expected.isEmpty || outcome.stdout.contains(expected), "\(command): \(outcome.stdout)")
        }
        // Revoking as the runbook shows it, with the id `keys create` printed.
        #expect(
            operations.contains("livevisits keys revoke KEY_ID"),
            "Docs/operations.md no longer shows 'livevisits keys revoke KEY_ID'")
        #expect(operations.contains("DELETE /v1/keys/{keyId}"))
        let created = try await Subprocess.run(livevisits, ["keys", "create", "--role", "ops"], environment: environment)
        let keyId = try #require(
            created.stdout.split(separator: "\n").first { $0.hasPrefix("key id: ") }?.dropFirst("key id: ".count))
        let revoked = try await Subprocess.run(livevisits, ["keys", "revoke", String(keyId)], environment: environment)
        #expect(revoked.status == 0, "keys revoke: \(revoked.stderr)")
        #expect(revoked.stdout.contains("revoked \(keyId)"))
        let again = try await Subprocess.run(livevisits, ["keys", "revoke", String(keyId)], environment: environment)
        #expect(again.status == 1)
    }

    /// Docs/reference.md is the one list of the outside: every command `livevisits help` names and every
    /// `LIVEVISITS_*` variable in Sources has its row, and it names no variable that no code reads.
    @Test func referenceListsEveryCommandAndVariable() async throws {
        let reference = try Self.text("Docs/reference.md")
        for command in try await Self.commands() {
            #expect(reference.contains("| `livevisits \(command)"), "Docs/reference.md has no row for livevisits \(command)")
        }
        let read = try ComposeFileTests.variablesRead()
        let scripts = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("scripts").path)
            .map { try Self.text("scripts/" + $0) }
        let known = scripts.reduce(read) { $0.union(ComposeFileTests.variables(in: $1)) }
        let documented = ComposeFileTests.variables(in: reference)
        #expect(read.subtracting(documented).isEmpty, "Docs/reference.md lacks \(read.subtracting(documented).sorted())")
        #expect(
            documented.subtracting(known).isEmpty,
            "Docs/reference.md names variables no code reads: \(documented.subtracting(known).sorted())")
    }

    /// A clone holds everything the docs point to: no `../shared/…` or other path out of the repository,
    /// every relative Markdown link (and its `#anchor`) resolves inside it, and every repository path
    /// quoted in backticks exists.
    @Test func docsLinkOnlyIntoTheRepository() throws {
        let rootPath = Self.root.standardizedFileURL.path
        for document in Self.documents + ["Docs/openapi.yaml"] {
            let text = try Self.text(document)
            let folder = Self.root.appendingPathComponent(document).deletingLastPathComponent()
            for outside in ["shared/", "CONTRACT.md", "seeds/"] {
                let named = text.contains(outside)
                #expect(!named, "\(document) points outside the repository: \(outside)")
            }
            func inside(_ path: String) -> Bool { path == rootPath || path.hasPrefix(rootPath + "/") }
            for link in Self.markdownLinks(in: text) {
                if link.hasPrefix("http://") || link.hasPrefix("https://") || link.hasPrefix("mailto:") { continue }
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let target =
                    parts[0].isEmpty ? Self.root.appendingPathComponent(document) : folder.appendingPathComponent(parts[0])
                let path = target.standardizedFileURL.path
                #expect(inside(path), "\(document) links out of the repository: \(link)")
                let exists = FileManager.default.fileExists(atPath: path)
                #expect(exists, "\(document) links to a missing file: \(link)")
                if parts.count == 2, path.hasSuffix(".md"), let page = try? String(contentsOfFile: path, encoding: .utf8) {
                    let found = Self.anchors(in: page).contains(parts[1])
                    #expect(found, "\(document) links to a missing heading: \(link)")
                }
            }
            for relative in Self.parentPaths(in: text) {
                let path = folder.appendingPathComponent(relative).standardizedFileURL.path
                #expect(inside(path), "\(document) names a path out of the repository: \(relative)")
            }
            for quoted in Self.quotedRepositoryPaths(in: text) {
                let exists = FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(quoted).path)
                #expect(exists, "\(document) names `\(quoted)`, which the repository does not hold")
            }
        }
    }

    /// The targets of `[text](target)`.
    static func markdownLinks(in text: String) -> [String] {
        text.components(separatedBy: "](").dropFirst().compactMap { rest in
            guard let end = rest.firstIndex(of: ")") else { return nil }
            return String(rest[..<end])
        }
    }

    /// The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens.
    static func anchors(in page: String) -> Set<String> {
        var inCode = false
        var anchors: Set<String> = []
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inCode.toggle() }
            guard !inCode, line.hasPrefix("#") else { continue }
            let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
            let kept = title.unicodeScalars.filter {
                CharacterSet.alphanumerics.contains($0) || $0 == " " || $0 == "-" || $0 == "_"
            }
            anchors.insert(String(String.UnicodeScalarView(kept)).replacingOccurrences(of: " ", with: "-"))
        }
        return anchors
    }

    /// Paths that climb with `../` (each run of `../` with what follows it, up to a space or a quote).
    static func parentPaths(in text: String) -> [String] {
        let characters = Array(text)
        var paths: [String] = []
        var index = 0
        while index + 2 < characters.count {
            let starts = characters[index] == "." && characters[index + 1] == "." && characters[index + 2] == "/"
            let preceded =
                index > 0 && (characters[index - 1] == "." || characters[index - 1] == "/" || characters[index - 1].isLetter)
            guard starts, !preceded else {
                index += 1
                continue
            }
            var end = index
            while end < characters.count, !characters[end].isWhitespace, !"`)\"'".contains(characters[end]) { end += 1 }
            paths.append(String(characters[index..<end]))
            index = end
        }
        return paths
    }

    /// Backtick-quoted paths under the repository's top folders, without placeholders (`…`, `*`, `<`).
    static func quotedRepositoryPaths(in text: String) -> [String] {
        let folders = ["Docs/", "Sources/", "Tests/", "Projections/", "Migrations/", "scripts/"]
        return text.components(separatedBy: "`").enumerated().compactMap { index, piece in
            guard index % 2 == 1, folders.contains(where: piece.hasPrefix), !piece.contains(" ") else { return nil }
            guard !piece.contains("…"), !piece.contains("*"), !piece.contains("<") else { return nil }
            let path = piece.split(separator: "#").first.map(String.init) ?? piece
            return path.hasSuffix("/") ? String(path.dropLast()) : path
        }
    }
}
