import Runtime
import Synchronization

/// The per-address lockout of one process: an address that failed `limit` authentications within
/// `RequestLimits.authenticationFailureWindow` seconds has its requests with a key answered 429 without
/// the key being checked, until the oldest of those failures is a window old. A locked-out address makes
/// no new failures, so it may try again, one at a time, as its failures age out.
///
/// At most `capacity` addresses are remembered: past that, those whose failures have all aged out go, and
/// if none has, everything does (an attacker with that many addresses is not held back by a per-address
/// limit anyway; a proxy in front should limit by network).
final class AuthenticationLockout: Sendable {
    let limit: Int
    let capacity: Int
    let window = RequestLimits.authenticationFailureWindow
    /// Per address, the times of its latest failures (at most `limit`), oldest first.
    private let failures = Lock<[String: [Double]]>([:])
    /// How many addresses `failures` holds: while none, a request takes no lock.
    private let tracked = Atomic<Int>(0)

    init(limit: Int, capacity: Int = 10_000) {
        self.limit = limit
        self.capacity = capacity
    }

    /// The seconds until `address` may present keys again, or nil when it may now.
    func lockedOut(_ address: String, now: Double) -> Double? {
        guard tracked.load(ordering: .relaxed) > 0 else { return nil }
        return failures.withLock { failures -> Double? in
            guard let times = failures[address] else { return nil }
            guard times.count >= limit else { return nil }
            let until = times[times.count - limit] + window
            return until > now ? until - now : nil
        }
    }

    /// Counts a failed authentication from `address` at `now`.
    func recordFailure(_ address: String, now: Double) {
        let horizon = now - window
        failures.withLock { failures in
            if failures[address] == nil, failures.count >= capacity {
                failures = failures.filter { ($0.value.last ?? -.infinity) > horizon }
                if failures.count >= capacity { failures.removeAll() }
            }
            failures[address, default: []].removeAll { $0 <= horizon }
            failures[address]!.append(now)
            if failures[address]!.count > limit { failures[address]!.removeFirst() }
            tracked.store(failures.count, ordering: .relaxed)
        }
    }
}
