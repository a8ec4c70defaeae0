import Postgres
import Runtime
import Synchronization

/// Sends `NOTIFY` for committed events, coalesced: any number of pokes while one NOTIFY is pending or in
/// flight become a single NOTIFY. It runs outside the appending transactions, because a NOTIFY inside a
/// transaction takes a cluster-wide lock at commit and serializes every committing writer.
final class EventNotifier: Sendable {
    private enum Phase { case idle, sending, sendingAndDirty }
    private let pool: PostgresPool
    private let channel: String
    private let phase = Mutex(Phase.idle)

    init(pool: PostgresPool, channel: String) {
        self.pool = pool
        self.channel = channel
    }

    func poke() {
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
