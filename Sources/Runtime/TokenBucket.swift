/// A token bucket: it fills at `rate` tokens a second up to `capacity`, and each request takes one.
/// A pure value on the caller's clock (seconds); whoever shares one holds the lock around it.
public struct TokenBucket: Sendable, Equatable {
    /// Tokens added per second.
    public let rate: Double
    /// The most tokens it holds: the burst a caller may spend at once.
    public let capacity: Double
    private var tokens: Double
    private var updatedAt: Double

    /// A full bucket at `now`.
    public init(rate: Double, capacity: Double, now: Double) {
        precondition(rate > 0 && capacity >= 1, "a token bucket needs a positive rate and room for one token")
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.updatedAt = now
    }

    /// Takes one token at `now`: nil when there was one, else the seconds until there will be (and nothing
    /// is taken). A clock that went back adds nothing.
    public mutating func take(now: Double) -> Double? {
        refill(now)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return (1 - tokens) / rate
    }

    /// Whether the bucket is full at `now` (a full bucket can be forgotten and made again).
    public func isFull(at now: Double) -> Bool {
        tokens + max(0, now - updatedAt) * rate >= capacity
    }

    private mutating func refill(_ now: Double) {
        let elapsed = now - updatedAt
        guard elapsed > 0 else { return }
        tokens = min(capacity, tokens + elapsed * rate)
        updatedAt = now
    }
}
