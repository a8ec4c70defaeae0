import Foundation
import HTTPAPI
import PersonalData
import Retention
import VisitCommands

/// A configuration problem (missing or malformed variable): exit code 2, the variable named.
struct ConfigurationError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// The process's configuration from the environment (contract §3).
struct Configuration {
    var environment: [String: String]

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    func databaseURL() throws -> String {
        guard let url = environment["LIVEVISITS_DATABASE_URL"], !url.isEmpty else {
            throw ConfigurationError("LIVEVISITS_DATABASE_URL is not set (a libpq connection string or URI)")
        }
        return url
    }

    /// `LIVEVISITS_DATABASE_LISTEN_URL`: where the LISTEN connections go (outbox wake-ups, key revocations),
    /// else `LIVEVISITS_DATABASE_URL`. Behind a transaction-pooling proxy (PgBouncer) LISTEN does not work:
    /// point this at PostgreSQL itself; left on the proxy, the followers poll instead.
    func listenURL() throws -> String {
        if let url = environment["LIVEVISITS_DATABASE_LISTEN_URL"], !url.isEmpty { return url }
        return try databaseURL()
    }

    /// `LIVEVISITS_DB_PREPARED_STATEMENTS` (`on`, the default, or `off`): named prepared statements, one per
    /// connection and SQL text. Off behind PgBouncer in transaction mode, which hands a client a different
    /// server connection per transaction (where the statement was never prepared).
    func usePreparedStatements() throws -> Bool {
        switch environment["LIVEVISITS_DB_PREPARED_STATEMENTS"] {
        case nil, "on"?: return true
        case "off"?: return false
        case let other?:
            throw ConfigurationError("LIVEVISITS_DB_PREPARED_STATEMENTS must be on or off, not \(other)")
        }
    }

    /// `LIVEVISITS_PERSONAL_DATA_KEY_FILE` (and, during a rotation, `LIVEVISITS_PERSONAL_DATA_PREVIOUS_KEY_FILE`):
    /// the 32-byte key files that wrap the customers' data keys; unset, those keys are stored unwrapped.
    /// A file that cannot be read or is not 32 bytes is a configuration error naming the variable.
    func personalDataKeys() throws -> PersonalDataKeys {
        func load(_ variable: String) throws -> WrappingKey? {
            guard let path = environment[variable], !path.isEmpty else { return nil }
            try Configuration.refuseShared(path, variable: variable)
            do {
                return try WrappingKey.load(path: path, origin: variable)
            } catch {
                throw ConfigurationError(error.message)
            }
        }
        let current = try load("LIVEVISITS_PERSONAL_DATA_KEY_FILE")
        let previous = try load("LIVEVISITS_PERSONAL_DATA_PREVIOUS_KEY_FILE")
        if previous != nil && current == nil {
            throw ConfigurationError(
                "LIVEVISITS_PERSONAL_DATA_PREVIOUS_KEY_FILE is set without LIVEVISITS_PERSONAL_DATA_KEY_FILE")
        }
        return PersonalDataKeys(current: current, previous: previous.map { [$0] } ?? [])
    }

    /// `LIVEVISITS_APNS_KEY_FILE`, when set: refused (`refuseShared`) if others than its owner may read it.
    func checkSigningKeyFile() throws {
        let variable = "LIVEVISITS_APNS_KEY_FILE"
        guard let path = environment[variable]?.trimmingCharacters(in: .whitespaces), !path.isEmpty else { return }
        try Configuration.refuseShared(path, variable: variable)
    }

    /// Refuses a key file (a signing key, a data key) that its group or others may read, write or run: any of
    /// those bits means the secret is not the owner's alone. One line naming the variable and the path.
    /// A file that cannot be looked at is left to the loader, whose error says so.
    static func refuseShared(_ path: String, variable: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else { return }
        let shared = status.st_mode & 0o077
        guard shared == 0 else {
            let mode = String(status.st_mode & 0o777, radix: 8)
            throw ConfigurationError(
                "\(variable): \(path) is open to its group or others (mode \(mode)); a key file must be 0600 (chmod 600 '\(path)')"
            )
        }
    }

    /// `LIVEVISITS_RETENTION_DAYS` (0–36500, default 30): how long finished deliveries, their attempts and
    /// retired tokens are kept; 0 keeps no finished delivery (the next prune takes them all).
    func retentionSettings() throws -> RetentionSettings {
        RetentionSettings(retentionDays: try wholeNumber("LIVEVISITS_RETENTION_DAYS", in: 0...36_500) ?? 30)
    }

    /// `LIVEVISITS_RATE_LIMIT` (requests a second per API key, bursts of twice as many; default 50) and
    /// `LIVEVISITS_AUTH_FAILURE_LIMIT` (failed authentications a minute per client address; default 20).
    func requestLimits() throws -> RequestLimits {
        var limits = RequestLimits.standard
        if let rate = try wholeNumber("LIVEVISITS_RATE_LIMIT", in: 1...1_000_000) { limits.requestsPerSecond = rate }
        if let failures = try wholeNumber("LIVEVISITS_AUTH_FAILURE_LIMIT", in: 1...1_000_000) {
            limits.authenticationFailuresPerMinute = failures
        }
        return limits
    }

    var httpAddress: String { environment["LIVEVISITS_HTTP_ADDR"] ?? "127.0.0.1:8080" }

    /// `LIVEVISITS_DB_POOL_SIZE`: database connections of a `serve` process (its pool; group commit and the
    /// listener have their own), or nil for the default.
    func databasePoolSize() throws -> Int? {
        try wholeNumber("LIVEVISITS_DB_POOL_SIZE", in: 1...500)
    }

    /// `LIVEVISITS_DB_WORK_TIMEOUT_SECONDS` (1–3600, default 15): the longest one piece of a `serve`
    /// process's database work (a request's transaction, a worker's claim or completion) may run before its
    /// statement is cancelled and the request answers 503. It is what keeps a primary whose synchronous
    /// standby is gone (every commit waits) from hanging requests without end.
    func databaseWorkTimeoutSeconds() throws -> Double {
        Double(try wholeNumber("LIVEVISITS_DB_WORK_TIMEOUT_SECONDS", in: 1...3600) ?? 15)
    }

    /// A tuning variable's whole number within `range`, nil when unset; anything else names the variable.
    private func wholeNumber(_ variable: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = environment[variable] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(
                "\(variable) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(text)")
        }
        return value
    }

    /// `LIVEVISITS_MAX_CHANNELS`: broadcast channels the fleet keeps per environment at most (contract §7;
    /// Apple allows 10,000).
    func maximumChannels() throws -> Int {
        try wholeNumber("LIVEVISITS_MAX_CHANNELS", in: 0...10_000) ?? 9500
    }

    /// `LIVEVISITS_COMMAND_BATCHES`: group-commit batches of visit commands in flight at once in an API process,
    /// else `VisitCommandBatcher.defaultConcurrentBatches`.
    func commandBatches() throws -> Int {
        try wholeNumber("LIVEVISITS_COMMAND_BATCHES", in: 1...16) ?? VisitCommandBatcher.defaultConcurrentBatches
    }

    /// `LIVEVISITS_COMMAND_WRITES`: of those batches, how many may be writing to PostgreSQL at once, else
    /// `VisitCommandBatcher.defaultConcurrentWrites` (more than `LIVEVISITS_COMMAND_BATCHES` counts as that many).
    func commandWrites() throws -> Int {
        try wholeNumber("LIVEVISITS_COMMAND_WRITES", in: 1...16) ?? VisitCommandBatcher.defaultConcurrentWrites
    }

    /// `LIVEVISITS_HTTP_THREADS`: libmicrohttpd's polling threads, else 4, or one per two cores where that
    /// is more. They only read, parse and write — handlers wait elsewhere — but each walks all of its suspended
    /// connections whenever one of them is resumed (libmicrohttpd 0.9), and every held tracking page keeps one
    /// suspended: with 10,000 pages one thread spent a third of its time walking. Four split that walk four ways
    /// and cost the pipeline nothing measurable on 2 cores (`livevisits-bench tracking`, `pipeline`).
    func httpThreads() throws -> Int {
        try wholeNumber("LIVEVISITS_HTTP_THREADS", in: 1...64) ?? max(4, ProcessInfo.processInfo.activeProcessorCount / 2)
    }

    /// `LIVEVISITS_HTTP_MAX_CONNECTIONS` (1–1,000,000, default 1024): connections the API holds open at once;
    /// more wait in the listen backlog until one closes.
    func httpMaxConnections() throws -> Int {
        try wholeNumber("LIVEVISITS_HTTP_MAX_CONNECTIONS", in: 1...1_000_000) ?? 1024
    }

    /// `LIVEVISITS_HTTP_MAX_CONNECTIONS_PER_IP` (0–1,000,000, default 128): connections one client address
    /// holds open at once; one more is closed at once. 0 lifts the limit (behind a proxy, whose connections
    /// all come from its address).
    func httpMaxConnectionsPerAddress() throws -> Int {
        try wholeNumber("LIVEVISITS_HTTP_MAX_CONNECTIONS_PER_IP", in: 0...1_000_000) ?? 128
    }

    var projectionsDirectory: URL {
        URL(fileURLWithPath: environment["LIVEVISITS_PROJECTIONS_DIR"] ?? "./Projections")
    }

    /// `LIVEVISITS_MIGRATIONS_DIR`, else `./Migrations`, else a `Migrations` folder above the executable
    /// (a checkout running `.build/debug/livevisits`).
    func migrationsDirectory() throws -> URL {
        if let dir = environment["LIVEVISITS_MIGRATIONS_DIR"] { return URL(fileURLWithPath: dir) }
        return try Configuration.locate("Migrations")
    }

    static func locate(_ folder: String) throws -> URL {
        let fm = FileManager.default
        let local = URL(fileURLWithPath: fm.currentDirectoryPath).appendingPathComponent(folder)
        if fm.fileExists(atPath: local.path) { return local }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = dir.appendingPathComponent(folder)
            if fm.fileExists(atPath: candidate.path) { return candidate }
            dir.deleteLastPathComponent()
        }
        throw ConfigurationError(
            "cannot find the \(folder) folder; run from the project folder or set LIVEVISITS_\(folder.uppercased())_DIR")
    }
}
