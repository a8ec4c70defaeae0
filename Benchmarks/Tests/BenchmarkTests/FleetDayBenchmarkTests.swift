import Foundation
import TestSupport
import Testing

/// `livevisits-bench fleet-day`, the instrument of the fleet's peak-hour figures, run tiny in both layouts:
/// the fleet's requests must be answered, and the checks that decide a step must find what a working
/// product gives — every answered event stored, every push owed acknowledged once, every webhook received —
/// so that a failing verdict means the product, not the benchmark. (Latencies are not asserted: a test is
/// not a timing.)
@Suite(.serialized, .timeLimit(.minutes(10))) struct FleetDayBenchmarkTests {
    @Test func aTinyFleetLosesNothingInBothLayouts() async throws {
        let outcome = try await BenchmarkRun.livevisitsBench([
            "fleet-day", "--technicians", "40", "--speed", "100", "--seconds", "3", "--lanes", "4", "--consoles", "4",
        ])
        #expect(outcome.status == 0, "fleet-day failed: \(outcome.stderr.suffix(2000))")
        let lines = outcome.stdout.split(separator: "\n").map(String.init)
        let locations = lines.filter { $0.hasPrefix("  POST /v1/technicians/{id}/location") }
        #expect(locations.count == 2, "\(outcome.stdout)")
        for line in locations {
            let columns = line.split(separator: " ").suffix(5)
            #expect((Int(columns.first ?? "") ?? 0) > 0 && columns.last == "0", "fixes sent, none failed: \(line)")
        }
        #expect(lines.filter { $0.contains("is not in the store: 0") }.count == 2, "\(outcome.stdout)")
        #expect(
            lines.filter {
                $0.contains("owed but not sent 0, sent but not acknowledged 0, acknowledged twice or more 0")
                    && $0.contains("sent by kind") && !$0.hasSuffix("sent by kind ; owed but not sent 0")
            }.count == 2, "\(outcome.stdout)")
        #expect(lines.filter { $0.contains("not sent 0, never received 0") }.count == 2, "\(outcome.stdout)")
        for layout in ["serve", "split"] {
            #expect(lines.contains { $0.hasPrefix("\(layout): ") && $0.contains("peak RSS") }, "\(outcome.stdout)")
        }
    }
}
