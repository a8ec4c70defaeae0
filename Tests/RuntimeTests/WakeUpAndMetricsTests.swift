import Runtime
import Synchronization
import TestSupportCore
import Testing

/// `WakeUp.signalOne` (the outbox wakes one extra claim loop per NOTIFY, not all of them) and the
/// metrics registry's counters and histograms after they became in-place updates.
@Suite(.timeLimit(.minutes(1))) struct WakeUpAndMetricsTests {
    @Test func signalOneWakesOneWaiterAndTheNextSignalTheOther() async throws {
        let wakeUp = WakeUp(clock: ManualClock(now: 0))
        let woken = Count()
        let waiters = (0..<2).map { _ in
            Task {
                if await wakeUp.wait(upTo: 30) { woken.value.add(1, ordering: .relaxed) }
            }
        }
        // Both wait before the first signal (a signal with nobody waiting is kept for the next one).
        try await eventually("both waiters waiting", within: 30) { wakeUp.waiting == 2 }
        wakeUp.signalOne()
        #expect(wakeUp.waiting == 1, "signalOne woke more than one waiter")
        try await eventually("one waiter woken", within: 30) { woken.value.load(ordering: .relaxed) == 1 }
        wakeUp.signalOne()
        try await eventually("the second waiter woken", within: 30) { woken.value.load(ordering: .relaxed) == 2 }
        for waiter in waiters { await waiter.value }
    }

    @Test func aSignalOneWithNobodyWaitingIsKeptForTheNextWait() async {
        let wakeUp = WakeUp()
        wakeUp.signalOne()
        #expect(await wakeUp.wait(upTo: 30))
    }

    @Test func aConsumedSignalWakesNobodyLater() async {
        let wakeUp = WakeUp(clock: ManualClock(now: 0))
        #expect(!wakeUp.consume(), "nothing was pending")
        wakeUp.signal()
        #expect(wakeUp.consume())
        #expect(!wakeUp.consume(), "taken once")
        // The next wait times out (the manual clock's 0 s) instead of returning at once for the taken signal.
        #expect(!(await wakeUp.wait(upTo: 0)))
        wakeUp.signal()
        #expect(await wakeUp.wait(upTo: 0), "a signal after the take still wakes")
    }

    @Test func countersAndHistogramsAddUpPerLabelSet() async {
        let metrics = Metrics()
        for _ in 0..<3 { metrics.increment("t_total", help: "h", labels: ["result": "sent"]) }
        metrics.increment("t_total", help: "h", labels: ["result": "say \"no\""])
        metrics.observe("t_seconds", help: "h", value: 0.002, buckets: [0.001, 0.01])
        metrics.observe("t_seconds", help: "h", value: 0.5, buckets: [0.001, 0.01])
        let text = await metrics.render()
        #expect(text.contains("t_total{result=\"sent\"} 3\n"))
        #expect(text.contains("t_total{result=\"say \\\"no\\\"\"} 1\n"))
        #expect(text.contains("t_seconds_bucket{le=\"0.001\"} 0\n"))
        #expect(text.contains("t_seconds_bucket{le=\"0.01\"} 1\n"))
        #expect(text.contains("t_seconds_count 2\n"))
    }
}

/// A counter the waiting tasks share.
final class Count: Sendable {
    let value = Atomic<Int>(0)
}
