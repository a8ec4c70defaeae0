import Foundation
import Testing

@testable import VisitDomain

/// Prints how many stored events per second decode + fold handles (no timed assertion:
/// figures are for the report; build with `-c release` for meaningful ones).
@Suite struct ReplayThroughputTests {
    /// A realistic log: `visits` visits of 10 events each, stored as the API stores them.
    static func log(visits: Int) -> [[StoredVisitEvent]] {
        (0..<visits).map { index in
            let t = TestVisit.t0 + index * 7
            let events: [(VisitEvent, Int)] = [
                (TestVisit.scheduled(visitId: "v-\(index)"), t),
                (.enRoute(ArrivalUpdate(kilometresAway: 12)), t + 60),
                (.progress(ArrivalUpdate(kilometresAway: 9.5)), t + 120),
                (.progress(ArrivalUpdate(kilometresAway: 6.25)), t + 180),
                (.progress(ArrivalUpdate(arrivalWindow: ArrivalWindow(start: t + 400, end: t + 700))), t + 200),
                (.nearby(ArrivalUpdate(kilometresAway: 1.2)), t + 240),
                (.progress(ArrivalUpdate(kilometresAway: 0.4)), t + 300),
                (.onSite, t + 360),
                (.finishing(.none), t + 2000),
                (.completed, t + 2400),
            ]
            return TestVisit.history(events).map(StoredVisitEvent.init)
        }
    }

    @Test func decodeAndFoldThroughput() throws {
        let log = Self.log(visits: 2_000)
        let count = log.reduce(0) { $0 + $1.count }
        let clock = ContinuousClock()
        var best = Duration.seconds(1_000)
        for _ in 0..<3 {
            var states: [VisitState] = []
            states.reserveCapacity(log.count)
            let elapsed = try clock.measure {
                for history in log { states.append(try #require(try VisitDecider.replay(history))) }
            }
            #expect(states.count == log.count)
            #expect(states.allSatisfy { $0.status == .completed && $0.version == 10 })
            best = min(best, elapsed)
        }
        let seconds = Double(best.components.seconds) + Double(best.components.attoseconds) / 1e18
        print(
            "VisitDomain replay: \(count) stored events decoded + folded in "
                + String(format: "%.3f", seconds) + " s = " + String(format: "%.0f", Double(count) / seconds)
                + " events/s (best of 3)")
    }
}
