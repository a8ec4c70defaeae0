import Foundation
import TestSupport
import Testing

/// Every benchmark answers `--help` with its usage on stdout and exit 0, and a mistake with one line on
/// stderr and exit 2, as the product's commands do (contract §2; `CommandHelp` walks the binaries' menus).
@Suite(.timeLimit(.minutes(10))) struct BenchmarkHelpTests {
    @Test func everyBenchmarkAnswersHelp() async throws {
        let walk = try await CommandHelp.walk(try await BenchmarkRun.livevisitsBenchPath(), program: "livevisits-bench")
        #expect(walk.problems.isEmpty, "\(walk.problems.joined(separator: "\n"))")
        for benchmark in [
            "api", "apns", "append", "big-store", "channels", "flat-cost", "fleet-day", "location", "outbox", "personal-data",
            "pipeline",
            "prune",
            "replay",
            "scale", "seed", "slow-clients", "technicians", "tracking", "webhooks",
        ] {
            #expect(walk.checked.contains("livevisits-bench \(benchmark)"), "\(walk.checked)")
        }
    }

    @Test func theHTTPServerBenchmarkAnswersHelp() async throws {
        let path = try await BuiltProduct.path("http-server-bench", package: "Benchmarks")
        let walk = try await CommandHelp.walk(path, program: "http-server-bench")
        #expect(walk.problems.isEmpty, "\(walk.problems.joined(separator: "\n"))")
        #expect(walk.checked == ["http-server-bench"])
    }
}
