import Runtime

/// When a worker last reaped expired leases (shared by its loops): `claim` says whether it is time again.
final class ReapSchedule: Sendable {
    private let last = Lock<Double>(-Double.infinity)
    func claim(now: Double, interval: Double) -> Bool {
        last.withLock { t in
            guard now - t >= interval || now < t else { return false }
            t = now
            return true
        }
    }
}
