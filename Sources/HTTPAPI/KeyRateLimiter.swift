import Runtime

/// The per-key rate limit of one process: a `TokenBucket` per authenticated key id, filling at the
/// limit's rate with room for twice as many. Only keys that authenticated get a bucket, so a stranger
/// cannot spend a known key's requests by presenting its id; buckets that are full again are forgotten
/// once there are more than `capacity` (a full bucket and no bucket are the same).
final class KeyRateLimiter: Sendable {
    let requestsPerSecond: Int
    let capacity: Int
    private let buckets = Lock<[String: TokenBucket]>([:])

    init(requestsPerSecond: Int, capacity: Int = 10_000) {
        self.requestsPerSecond = requestsPerSecond
        self.capacity = capacity
    }

    /// Counts one request of `keyId` at `now`: nil when it may go ahead, else the seconds until it may.
    func admit(_ keyId: String, now: Double) -> Double? {
        let rate = Double(requestsPerSecond)
        return buckets.withLock { buckets in
            if let index = buckets.index(forKey: keyId) {
                return buckets.values[index].take(now: now)
            }
            if buckets.count >= capacity { buckets = buckets.filter { !$0.value.isFull(at: now) } }
            var bucket = TokenBucket(rate: rate, capacity: 2 * rate, now: now)
            let wait = bucket.take(now: now)
            buckets[keyId] = bucket
            return wait
        }
    }
}
