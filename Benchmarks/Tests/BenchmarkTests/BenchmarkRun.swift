import Foundation
import TestSupport

/// The benchmarks as their tests run them: built from the current sources (`BuiltProduct`), from the
/// repository root, where they read `Migrations/` and `Projections/`.
enum BenchmarkRun {
    /// `livevisits-bench`, built; the `livevisits` some benchmarks start is built next to it.
    static func livevisitsBenchPath() async throws -> String {
        try await BuiltProduct.path("livevisits-bench", package: "Benchmarks")
    }

    /// Runs `livevisits-bench` with `arguments` against the tests' cluster, logging warnings only.
    static func livevisitsBench(_ arguments: [String]) async throws -> Subprocess.Outcome {
        let bench = try await livevisitsBenchPath()
        let command = "cd '\(TestDatabase.repositoryRoot.path)' && exec '\(bench)' " + arguments.joined(separator: " ")
        var environment = ProcessInfo.processInfo.environment
        environment["LIVEVISITS_LOG_LEVEL"] = "warning"
        environment["LIVEVISITS_DATABASE_URL"] = TestDatabase.serverURL
        return try await Subprocess.run("/bin/sh", ["-c", command], environment: environment)
    }
}
