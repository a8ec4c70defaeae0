import Foundation
import TestSupport
import Testing

/// `livevisits-bench pipeline`, the instrument of the end-to-end figures, run small: both layouts, a backlog
/// drained by one worker, its load through `LoadLoop`. Every event posted must come back as an acknowledged
/// push, or as one superseded by the next event on its visit before it went (contract §6: a visit posted to
/// every few milliseconds may outrun a busy worker), and the table must say so — a benchmark that loses
/// events or miscounts them would measure nothing.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PipelineBenchmarkTests {
    @Test func aSmallRunDeliversEveryEventsPushInBothLayouts() async throws {
        let arguments = [
            "pipeline", "--connections", "3", "--seconds", "1", "--visits-per-connection", "4", "--backlog", "30",
            "--no-pgbench", "--no-aioapns",
        ]
        let outcome = try await BenchmarkRun.livevisitsBench(arguments)
        #expect(outcome.status == 0, "pipeline failed: \(outcome.stderr.suffix(2000))")

        // layout conns events/s events refused pushes-acked superseded …
        let rows = outcome.stdout.split(separator: "\n").map { $0.split(separator: " ") }
            .filter { ["serve", "split"].contains($0.first) }
        #expect(rows.map { String($0[0]) } == ["serve", "split"], "\(outcome.stdout)")
        for row in rows {
            let events = Int(row[3]) ?? -1
            #expect(events > 0, "\(row.joined(separator: " "))")
            #expect(row[4] == "0", "refused: \(row.joined(separator: " "))")
            let (acked, superseded) = (Int(row[5]) ?? -1, Int(row[6]) ?? -1)
            #expect(acked > 0 && superseded >= 0, "\(row.joined(separator: " "))")
            #expect(
                acked + superseded == events, "every event's push acknowledged or superseded: \(row.joined(separator: " "))")
        }
        #expect(outcome.stdout.contains("backlog: one worker drained 30 pushes"), "\(outcome.stdout)")
    }
}
