import Runtime
import Synchronization

/// Sends `NOTIFY` on one channel after commits, coalesced: any number of pokes while one NOTIFY is pending
/// or in flight become a single NOTIFY, and a NOTIFY asked for while one was in flight waits until
/// `minimumInterval` after that one's start. Used for new events and new outbox rows. It runs outside the
/// writing transactions, because a NOTIFY inside a transaction takes a cluster-wide lock at commit and
/// serializes every committing writer.
///
/// The interval bounds the cost under load — at a thousand commits a second, back-to-back NOTIFYs would
/// be nearly one extra transaction per commit — while a lone commit still notifies at once, and a busy
/// listener hears within the interval.
public final class PostgresNotifier: Sendable {
    private enum Phase { case idle, sending, sendingAndDirty }
    private let pool: PostgresPool
    private let channel: String
    private let minimumInterval: Duration
    private let phase = Mutex(Phase.idle)

    public init(pool: PostgresPool, channel: String, minimumInterval: Duration = .milliseconds(2)) {
        self.pool = pool
        self.channel = channel
        self.minimumInterval = minimumInterval
    }

    /// Asks for one NOTIFY soon (coalesced with any already pending).
    public func poke() {
        let start = phase.withLock { p -> Bool in
            switch p {
            case .idle:
                p = .sending
                return true
            case .sending, .sendingAndDirty:
                p = .sendingAndDirty
                return false
            }
        }
        guard start else { return }
        let pool = self.pool
        let channel = self.channel
        let interval = minimumInterval
        Task.detached { [self] in
            while true {
                let started = ContinuousClock.now
                _ = try? await pool.query("SELECT pg_notify(\(channel), '')")
                let again = phase.withLock { p -> Bool in
                    if p == .sendingAndDirty {
                        p = .sending
                        return true
                    }
                    p = .idle
                    return false
                }
                if !again { return }
                try? await Task.sleep(until: started + interval, clock: .continuous)
            }
        }
    }
}
