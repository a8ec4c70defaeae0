import Runtime
import Testing

/// `TokenBucket`: a burst of its capacity, then one token per 1/rate seconds, never more than the capacity,
/// and nothing for a clock that went back.
@Suite struct TokenBucketTests {
    @Test func burstsThenRefillsAtItsRate() {
        var bucket = TokenBucket(rate: 4, capacity: 8, now: 100)
        for _ in 0..<8 { #expect(bucket.take(now: 100) == nil) }
        #expect(bucket.take(now: 100) == 0.25)
        #expect(bucket.take(now: 100.125) == 0.125, "half a token there: the rest of the wait")
        #expect(bucket.take(now: 100.25) == nil)
        #expect(!bucket.isFull(at: 101))
        #expect(bucket.isFull(at: 103))
        // Idle for long: no more than the capacity.
        for _ in 0..<8 { #expect(bucket.take(now: 1_000) == nil) }
        #expect(bucket.take(now: 1_000) != nil)
    }

    @Test func aClockThatGoesBackAddsNothing() {
        var bucket = TokenBucket(rate: 1, capacity: 1, now: 50)
        #expect(bucket.take(now: 50) == nil)
        #expect(bucket.take(now: 40) == 1)
        #expect(bucket.take(now: 50.5) == 0.5)
        #expect(bucket.take(now: 51) == nil)
    }
}
