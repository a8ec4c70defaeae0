import Foundation
import TestSupport
import Testing

/// The commands README.md and the Docs show must stay true: every `livevisits <command>` they name is a
/// real command, every `scripts/…` exists, and the operator commands that can run here do run (against a
/// scratch database). A doc that drifts from the code fails here.
@Suite(.timeLimit(.minutes(10))) struct DocsCommandTests {
    static let root = TestDatabase.repositoryRoot
    static let documents = ["README.md", "Docs/architecture.md", "Docs/operations.md", "Docs/live-activity-contract.md", "Docs/demo.md"]

    static func text(_ document: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
    }

    /// Every `word` following `prefix` in the text.
    static func words(after prefix: String, in text: String) -> [String] {
        text.components(separatedBy: prefix).dropFirst().map { rest in
            String(rest.prefix { $0.isLowercase || $0.isNumber || $0 == "-" || $0 == "_" })
        }
    }

    @Test func namedCommandsAndScriptsExist() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let help = try await Subprocess.run(livevisits, ["help"])
        #expect(help.status == 0)
        let commands = Set(help.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) })
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
        let (url, pool) = try await TestDatabase.create(poolSize: 1)
        await pool.close()
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
        #expect(operations.contains("livevisits keys revoke KEY_ID"), "Docs/operations.md no longer shows 'livevisits keys revoke KEY_ID'")
        #expect(operations.contains("DELETE /v1/keys/{keyId}"))
        let created = try await Subprocess.run(livevisits, ["keys", "create", "--role", "ops"], environment: environment)
        let keyId = try #require(created.stdout.split(separator: "\n").first { $0.hasPrefix("key id: ") }?.dropFirst("key id: ".count))
        let revoked = try await Subprocess.run(livevisits, ["keys", "revoke", String(keyId)], environment: environment)
        #expect(revoked.status == 0, "keys revoke: \(revoked.stderr)")
        #expect(revoked.stdout.contains("revoked \(keyId)"))
        let again = try await Subprocess.run(livevisits, ["keys", "revoke", String(keyId)], environment: environment)
        #expect(again.status == 1)
    }
}
