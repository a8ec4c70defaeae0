import Foundation
import TestSupport
import Testing

/// `livevisits serve`'s own tuning variables: a bad value is a configuration error that names it (exit 2).
@Suite(.timeLimit(.minutes(10))) struct ServeConfigurationTests {
    /// A tuning variable out of its range, or not a number: the variable, its range and the value are named.
    @Test(arguments: [
        ("LIVEVISITS_HTTP_THREADS", "0", "1 to 64"), ("LIVEVISITS_HTTP_THREADS", "65", "1 to 64"),
        ("LIVEVISITS_HTTP_THREADS", "two", "1 to 64"), ("LIVEVISITS_COMMAND_BATCHES", "0", "1 to 16"),
        ("LIVEVISITS_COMMAND_BATCHES", "17", "1 to 16"), ("LIVEVISITS_COMMAND_BATCHES", "one", "1 to 16"),
        ("LIVEVISITS_COMMAND_WRITES", "0", "1 to 16"), ("LIVEVISITS_COMMAND_WRITES", "two", "1 to 16"),
        ("LIVEVISITS_RATE_LIMIT", "0", "1 to 1000000"), ("LIVEVISITS_AUTH_FAILURE_LIMIT", "many", "1 to 1000000"),
    ])
    func aBadTuningValueIsAConfigurationError(_ variable: String, _ value: String, _ range: String) async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let databaseURL = try await TestDatabase.createMigrated()
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = databaseURL
        environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:0"
        environment[variable] = value
        environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
        environment["LIVEVISITS_PROJECTIONS_DIR"] = TestDatabase.projectionsDirectory.path
        let outcome = try await Subprocess.run(livevisits, ["serve", "--api-only"], environment: environment)
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("\(variable) must be a whole number from \(range), not \(value)"))
    }

    /// `LIVEVISITS_PERSONAL_DATA_KEY_FILE` of the wrong size, or unreadable: refused at start, naming it.
    @Test(arguments: ["short", "missing"])
    func aBadPersonalDataKeyFileIsAConfigurationError(_ kind: String) async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let databaseURL = try await TestDatabase.createMigrated()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lv-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("personal-data.key").path
        if kind == "short" { FileManager.default.createFile(atPath: path, contents: Data(repeating: 1, count: 16)) }
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = databaseURL
        environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:0"
        environment["LIVEVISITS_PERSONAL_DATA_KEY_FILE"] = path
        environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
        environment["LIVEVISITS_PROJECTIONS_DIR"] = TestDatabase.projectionsDirectory.path
        let outcome = try await Subprocess.run(livevisits, ["serve", "--api-only"], environment: environment)
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("LIVEVISITS_PERSONAL_DATA_KEY_FILE"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains(kind == "short" ? "holds 16 bytes" : "cannot read"), "\(outcome.stderr)")
    }
}
