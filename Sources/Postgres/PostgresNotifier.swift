import Runtime

/// Sends `NOTIFY` after commits, coalesced across channels: any number of pokes, on any of the channels,
/// while a NOTIFY is pending or in flight become a single statement that notifies every channel poked
/// (`SELECT pg_notify(channel, '') FROM unnest($1::text[])`), and a statement asked for while one was in flight
/// waits until `minimumInterval` after that one's start. One notifier serves a whole pool
/// (`PostgresPool.notifyAfterCommit`), so the event store's channel and the outbox's share their
/// statements: a visit command wakes both, and under load that is one small transaction per interval
/// instead of one per channel.
///
/// It runs outside the writing transactions, because a NOTIFY inside a transaction takes a cluster-wide
/// lock at commit and serializes every committing writer. The interval bounds the cost under load — at
/// a thousand commits a second, back-to-back NOTIFYs would be nearly one extra transaction per commit —
/// while a lone commit still notifies at once, and a busy listener hears within the interval.
public final class PostgresNotifier: Sendable {
    private struct State {
        var pending: [String] = []
        var sending = false
    }

    private let minimumInterval: Duration
    private let state = Lock(State())

    public init(minimumInterval: Duration = .milliseconds(2)) {
        self.minimumInterval = minimumInterval
    }

    /// Asks for a NOTIFY on `channel` soon, through `pool` (coalesced with any already pending).
    public func poke(_ channel: String, through pool: PostgresPool) {
        let start = state.withLock { s -> Bool in
            if !s.pending.contains(channel) { s.pending.append(channel) }
            guard !s.sending else { return false }
            s.sending = true
            return true
        }
        guard start else { return }
        let interval = minimumInterval
        Task.detached { [self] in
            while let channels = next() {
                let started = ContinuousClock.now
                _ = try? await pool.query(PostgresNotifier.statement(channels))
                // More pokes came in while this one was in flight: they wait out the interval.
                if hasPending { try? await Task.sleep(until: started + interval, clock: .continuous) }
            }
        }
    }

    /// The channels to notify now, or nil when nothing is pending (the sender then stops).
    private func next() -> [String]? {
        state.withLock { s in
            guard !s.pending.isEmpty else {
                s.sending = false
                return nil
            }
            defer { s.pending = [] }
            return s.pending
        }
    }

    private var hasPending: Bool { state.withLock { !$0.pending.isEmpty } }

    /// One statement notifying every channel (the names travel as one bind parameter), planned once per
    /// connection like the command batches' statements whose connections it borrows.
    static func statement(_ channels: [String]) -> PostgresQuery {
        let query: PostgresQuery = "SELECT pg_notify(channel, '') FROM unnest(\(channels)::text[]) AS channel"
        return query.plannedOnce()
    }
}
