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
        ("LIVEVISITS_HTTP_MAX_CONNECTIONS", "0", "1 to 1000000"), ("LIVEVISITS_HTTP_MAX_CONNECTIONS", "many", "1 to 1000000"),
        ("LIVEVISITS_HTTP_MAX_CONNECTIONS_PER_IP", "-1", "0 to 1000000"),
        ("LIVEVISITS_HTTP_MAX_CONNECTIONS_PER_IP", "1e3", "0 to 1000000"),
        ("LIVEVISITS_RETENTION_DAYS", "-1", "0 to 36500"), ("LIVEVISITS_RETENTION_DAYS", "36501", "0 to 36500"),
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

    /// A webhook URL that is not http(s), or one of the two webhook variables without the other: refused at
    /// start with one line naming the variable (exit 2), before the database is even reached.
    @Test(arguments: [
        ("ftp://dispatch.example/hooks", "s3cret", "LIVEVISITS_WEBHOOK_URL must be an http:// or https:// URL"),
        ("dispatch.example/hooks", "s3cret", "LIVEVISITS_WEBHOOK_URL must be an http:// or https:// URL"),
        ("https://dispatch.example/hooks", "", "LIVEVISITS_WEBHOOK_SECRET is not set"),
        ("", "s3cret", "LIVEVISITS_WEBHOOK_URL is not set"),
    ])
    func aBadWebhookSettingIsRefusedAtStart(_ url: String, _ secret: String, _ message: String) async throws {
        let livevisits = try await BuiltProduct.livevisits()
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = "postgresql://nobody@127.0.0.1:1/none"
        environment["LIVEVISITS_WEBHOOK_URL"] = url
        environment["LIVEVISITS_WEBHOOK_SECRET"] = secret
        let outcome = try await Subprocess.run(livevisits, ["serve"], environment: environment)
        #expect(outcome.status == 2)
        let lines = outcome.stderr.split(separator: "\n").filter { !$0.isEmpty }
        #expect(lines.count == 1 && lines[0].contains(message), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("s3cret"))
    }

    /// More connections than the open-files hard limit allows: refused at start, naming the variable.
    @Test func moreConnectionsThanOpenFilesIsRefused() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let databaseURL = try await TestDatabase.createMigrated()
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = databaseURL
        environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:0"
        environment["LIVEVISITS_HTTP_MAX_CONNECTIONS"] = "5000"
        environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
        environment["LIVEVISITS_PROJECTIONS_DIR"] = TestDatabase.projectionsDirectory.path
        let outcome = try await Subprocess.run(
            "/usr/bin/prlimit", ["--nofile=1024:1024", livevisits, "serve", "--api-only"], environment: environment)
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("LIVEVISITS_HTTP_MAX_CONNECTIONS=5000 needs"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("the hard limit is 1024"), "\(outcome.stderr)")
    }

    /// `LIVEVISITS_PERSONAL_DATA_KEY_FILE` of the wrong size, or unreadable: refused at start, naming it.
    @Test(arguments: ["short", "missing"])
    func aBadPersonalDataKeyFileIsAConfigurationError(_ kind: String) async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let databaseURL = try await TestDatabase.createMigrated()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lv-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("personal-data.key").path
        if kind == "short" {
            FileManager.default.createFile(
                atPath: path, contents: Data(repeating: 1, count: 16), attributes: [.posixPermissions: 0o600])
        }
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

    /// A signing or data key file its group or others may read (any bit of 0o077) is refused at start, in one
    /// line naming the variable and the path (exit 2); the same file at 0600 passes that check.
    @Test(arguments: ["LIVEVISITS_APNS_KEY_FILE", "LIVEVISITS_PERSONAL_DATA_KEY_FILE"])
    func aKeyFileOthersMayReadIsRefused(_ variable: String) async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let databaseURL = try await TestDatabase.createMigrated()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lv-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("shared.key").path
        if variable == "LIVEVISITS_APNS_KEY_FILE" {
            try await SigningKeyFile.write(to: path)
        } else {
            FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 32))
        }
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = databaseURL
        environment["LIVEVISITS_HTTP_ADDR"] = "127.0.0.1:0"
        environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
        environment["LIVEVISITS_PROJECTIONS_DIR"] = TestDatabase.projectionsDirectory.path
        environment[variable] = path
        for mode in [0o640, 0o604, 0o610] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            let outcome = try await Subprocess.run(livevisits, ["serve", "--api-only"], environment: environment)
            #expect(outcome.status == 2)
            let line = outcome.stderr.split(separator: "\n").first { $0.contains(variable) }
            #expect(line?.contains(path) == true, "\(outcome.stderr)")
            #expect(line?.contains("mode \(String(mode, radix: 8))") == true, "\(outcome.stderr)")
        }
        // At 0600 the start goes past the check, and stops later at the bad address it is given.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        environment["LIVEVISITS_HTTP_ADDR"] = "no address"
        let outcome = try await Subprocess.run(livevisits, ["serve", "--api-only"], environment: environment)
        #expect(outcome.status != 0)
        #expect(!outcome.stderr.contains("open to its group or others"), "\(outcome.stderr)")
    }

    /// `LIVEVISITS_RETENTION_DAYS=0` is accepted: the prune keeps no finished delivery.
    @Test func aRetentionOfZeroDaysIsAccepted() async throws {
        let livevisits = try await BuiltProduct.livevisits()
        let databaseURL = try await TestDatabase.createMigrated()
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_DATABASE_URL"] = databaseURL
        environment["LIVEVISITS_MIGRATIONS_DIR"] = TestDatabase.migrationsDirectory.path
        environment["LIVEVISITS_PROJECTIONS_DIR"] = TestDatabase.projectionsDirectory.path
        environment["LIVEVISITS_RETENTION_DAYS"] = "0"
        let outcome = try await Subprocess.run(livevisits, ["prune"], environment: environment)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("prune: deliveries 0"), "\(outcome.stdout)")
    }
}
