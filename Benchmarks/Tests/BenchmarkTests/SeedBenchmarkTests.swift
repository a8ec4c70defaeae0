import Foundation
import TestSupport
import Testing

/// `livevisits-bench seed` and `big-store`, run tiny: the store loads (events by COPY, the read models by the
/// product's replay, tokens and a month of pushes) and reads back through the API as generated — the command
/// fails otherwise — and the measurement prints every figure its targets need.
@Suite(.serialized, .timeLimit(.minutes(5))) struct SeedBenchmarkTests {
    @Test func aTinyStoreReadsBackThroughTheAPI() async throws {
        let outcome = try await BenchmarkRun.livevisitsBench(["seed", "--events", "4000", "--visits", "200", "--drop"])
        #expect(outcome.status == 0, "seed failed: \(outcome.stderr.suffix(2000))")
        #expect(outcome.stdout.contains("read models"), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("visits read back through the API as generated"), "\(outcome.stdout)")
        // The year's events: about 20 a visit (cancelled visits have fewer, today's later ones are not over).
        let line = outcome.stdout.split(separator: "\n").first { $0.hasPrefix("seed: ") } ?? ""
        let loaded = Int(line.split(separator: " ")[1]) ?? 0
        #expect(loaded > 3_000 && loaded <= 4_000, "\(line)")
    }

    @Test func theBigStoreMeasurementPrintsEveryFigure() async throws {
        let outcome = try await BenchmarkRun.livevisitsBench([
            "big-store", "--events", "2000", "--visits", "100", "--fresh-visits", "20", "--seconds", "0.3", "--callers", "2",
        ])
        #expect(outcome.status == 0, "big-store failed: \(outcome.stderr.suffix(2000))")
        for figure in [
            "append (POST)", "GET visit", "list (customer)", "list (technician)", "list (all, active)", "history", "deliveries",
            "replay visits over the year:", "prune of a month:", "append beside prune:",
        ] {
            #expect(outcome.stdout.contains(figure), "no \(figure) in \(outcome.stdout)")
        }
        #expect(outcome.stdout.contains("prune: deliveries"), "\(outcome.stdout)")
    }
}
