import Foundation
import TestSupport
import Testing

/// `livevisits-bench location`, the instrument of the fixes' figures, run small: the fixes that change
/// nothing must append nothing, the mixed ones exactly one `progress` per changing fix, and both print a
/// rate — a benchmark whose fixes all failed, or all changed something, would measure something else.
@Suite(.serialized, .timeLimit(.minutes(5))) struct LocationBenchmarkTests {
    @Test func aSmallRunAppendsOnlyForTheChangingFixes() async throws {
        let outcome = try await BenchmarkRun.livevisitsBench([
            "location", "--technicians", "40", "--connections", "4", "--duration", "1", "--changing", "50",
        ])
        #expect(outcome.status == 0, "location failed: \(outcome.stderr.suffix(2000))")
        let rows = outcome.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        let quiet = try #require(rows.first { $0.starts(with: ["no", "change"]) }, "\(outcome.stdout)")
        #expect((Double(quiet[2]) ?? 0) > 0, "\(quiet)")
        #expect(quiet[5] == "0", "fixes that change nothing appended events: \(quiet)")
        let mixed = try #require(rows.first { $0.starts(with: ["50", "%", "changing"]) }, "\(outcome.stdout)")
        let (rate, events) = (Double(mixed[3]) ?? 0, Double(mixed[6]) ?? 0)
        // Every other fix of a connection changes its technician's distance: about half the fixes append one event.
        #expect(rate > 0 && events > 0, "\(mixed)")
        #expect(outcome.stdout.contains("pgbench single-row insert"), "\(outcome.stdout)")
    }
}
