import Foundation
import TestSupport
import Testing

/// `livevisits-bench append`, the instrument of the appends' figures, run small: both pgbench baselines (the
/// single-row insert, the append at a stream's next position) and every mode (group commit, one transaction
/// per command, the event store's append alone) on both distributions must append, and the store's writers
/// must learn their streams' versions from what they appended and from conflicts — a benchmark whose writers
/// conflicted forever would print a rate of nothing.
@Suite(.serialized, .timeLimit(.minutes(5))) struct AppendBenchmarkTests {
    @Test func aSmallRunOfEveryModeAppends() async throws {
        let arguments = [
            "append", "--mode", "batched,direct,store", "--distribution", "uniform,zipf", "--writers", "4",
            "--duration", "1", "--streams", "40",
        ]
        let outcome = try await BenchmarkRun.livevisitsBench(arguments)
        #expect(outcome.status == 0, "append failed: \(outcome.stderr.suffix(2000))")

        // The summary: mode distribution writers events/s p50 p99 conflicts/s …
        let summary = outcome.stdout.components(separatedBy: "\nsummary").last ?? ""
        let lines = summary.split(separator: "\n").map { $0.split(separator: " ") }
        let baselines = lines.filter { $0.first == "pgbench" }
        #expect(baselines.map { "\($0[1])" } == ["insert", "append"], "\(outcome.stdout)")
        for row in baselines { #expect((Double(row[3]) ?? -1) > 0, "\(row.joined(separator: " "))") }
        let rows = lines.filter { ["batched", "direct", "store"].contains($0.first) }
        #expect(
            rows.map { "\($0[0]) \($0[1])" } == [
                "batched uniform", "batched zipf", "direct uniform", "direct zipf", "store uniform", "store zipf",
            ], "\(outcome.stdout)")
        for row in rows {
            let (events, conflicts) = (Double(row[3]) ?? -1, Double(row[6]) ?? -1)
            #expect(events > 0, "\(row.joined(separator: " "))")
            // (A hot Zipf stream may be lost to often; evenly spread streams rarely.)
            if row[1] == "uniform" { #expect(conflicts >= 0 && conflicts < events, "\(row.joined(separator: " "))") }
        }
    }
}
