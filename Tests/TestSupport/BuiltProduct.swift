import Foundation
import Synchronization

/// The project's executables as the tests run them: built from the current sources once per test process
/// (the first caller builds, the others wait for that build), never an old binary left in `.build`.
public enum BuiltProduct {
    private static let builds = Mutex<[String: Task<String, any Error>]>([:])

    /// Builds `product` (`swift build --product`) once per process and returns the executable's path; a
    /// failed build throws with the compiler's output.
    public static func path(_ product: String) async throws -> String {
        let build = builds.withLock { builds in
            if let running = builds[product] { return running }
            let task = Task { try await buildNow(product) }
            builds[product] = task
            return task
        }
        return try await build.value
    }

    /// `livevisits`, built.
    public static func livevisits() async throws -> String { try await path("livevisits") }

    /// Runs `livevisits-bench` with `arguments` from the repository root (where it reads `Migrations/` and
    /// `Projections/`), against the tests' cluster, logging warnings only; the `livevisits` some benchmarks
    /// start next to it is built too.
    public static func runBenchmark(_ arguments: [String]) async throws -> Subprocess.Outcome {
        let bench = try await path("livevisits-bench")
        _ = try await livevisits()
        let command = "cd '\(TestDatabase.repositoryRoot.path)' && exec '\(bench)' " + arguments.joined(separator: " ")
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_LOG_LEVEL"] = "warning"
        environment["LIVEVISITS_DATABASE_URL"] = TestDatabase.serverURL
        return try await Subprocess.run("/bin/sh", ["-c", command], environment: environment)
    }

    private static func buildNow(_ product: String) async throws -> String {
        let root = TestDatabase.repositoryRoot.path
        // `swift test` holds the lock on .build while the tests run; this build only adds the product's own
        // objects and links it, which the running test binary does not read.
        let common = ["swift", "build", "--package-path", root, "--product", product, "--ignore-lock"]
        let built = try await Subprocess.run("/usr/bin/env", common)
        guard built.status == 0 else {
            throw BuildFailed(product: product, output: (built.stdout + built.stderr).suffix(4000).description)
        }
        let binPath = try await Subprocess.run("/usr/bin/env", common + ["--show-bin-path"])
        let directory = binPath.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard binPath.status == 0, !directory.isEmpty else {
            throw BuildFailed(product: product, output: "swift build --show-bin-path: \(binPath.stderr)")
        }
        let path = URL(fileURLWithPath: directory).appendingPathComponent(product).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BuildFailed(product: product, output: "no executable at \(path)")
        }
        return path
    }

    public struct BuildFailed: Error, CustomStringConvertible {
        public let product: String
        public let output: String
        public var description: String { "swift build --product \(product) failed:\n\(output)" }
    }
}
