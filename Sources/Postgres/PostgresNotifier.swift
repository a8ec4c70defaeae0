import Runtime
import Synchronization

/// Sends `NOTIFY` on one channel after commits, coalesced: any number of pokes while one NOTIFY is pending
/// or in flight become a single NOTIFY. Used for new events and new outbox rows. It runs outside the writing
/// transactions, because a NOTIFY inside a transaction takes a cluster-wide lock at commit and serializes
/// every committing writer.
public final class PostgresNotifier: Sendable {
    private enum Phase { case idle, sending, sendingAndDirty }
    private let pool: PostgresPool
    private let channel: String
    private let phase = Mutex(Phase.idle)

    public init(pool: PostgresPool, channel: String) {
        self.pool = pool
        self.channel = channel
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
        Task.detached { [self] in
            while true {
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
            }
        }
    }
}
