import Outbox
import OutboxTestSupport
import Testing

@Suite(.timeLimit(.minutes(5))) struct BackoffTests {
    @Test func ceilingDoublesFromTheBaseUpToTheCap() {
        let backoff = Backoff(baseSeconds: 1, capSeconds: 300)
        #expect((0..<9).map { backoff.ceiling(retry: $0) } == [1, 2, 4, 8, 16, 32, 64, 128, 256])
        #expect(backoff.ceiling(retry: 9) == 300)
        #expect(backoff.ceiling(retry: 10) == 300)
    }

    @Test func noAttemptCountOverflows() {
        let backoff = Backoff(baseSeconds: 1, capSeconds: 300)
        for retry in [63, 64, 1023, 1024, 1_000_000, Int.max] {
            #expect(backoff.ceiling(retry: retry) == 300)
            #expect(backoff.delay(retry: retry, unit: 1) == 300)
        }
        #expect(backoff.ceiling(retry: -5) == 1)
    }

    @Test func fullJitterSpansZeroToTheCeiling() {
        let backoff = Backoff(baseSeconds: 0.5, capSeconds: 60)
        #expect(backoff.delay(retry: 3, unit: 0) == 0)
        #expect(backoff.delay(retry: 3, unit: 0.5) == 2)
        #expect(backoff.delay(retry: 3, unit: 1) == 4)
        #expect(backoff.delay(retry: 3, unit: 7) == 4)
        for _ in 0..<1000 {
            let d = backoff.delay(retry: 4)
            #expect(d >= 0 && d <= 8)
        }
    }
}
