import Runtime

/// Rows recently read from the database, by id, so that a hot path need not read them again: each for
/// `timeToLive` at most, `capacity` of them at most (more, and the cache starts over).
///
/// A change to a row stays visible at once in every process: whoever changes it announces its id on
/// `channel` in the same transaction, and `listener(url:)` (a service of the process) drops it here the
/// moment the notification arrives. The cache is only used while that listener is listening: without
/// one, while it reconnects, and after it reconnected (notifications may have been missed, so it forgets
/// everything) every caller reads the database. The API's key cache and the personal-data key cache are
/// both this.
public final class ListenedCache<Value: Sendable>: Sendable {
    private struct Entry {
        let value: Value
        let expires: ContinuousClock.Instant
    }

    private struct Entries {
        var byId: [String: Entry] = [:]
        /// Moves on every forget: a row read before a change is not remembered after it.
        var generation: UInt64 = 0
        /// The service that hears changes, once started. Kept under the same lock as the rows, so that a
        /// look-up takes one lock (every API request looks up its key: it was the API's most contended lock).
        var changes: PostgresListener?

        /// True while changes can be heard.
        var isActive: Bool { changes?.isListening.load(ordering: .sequentiallyConsistent) ?? false }

        /// The row's value while it is unexpired at `now`; an expired row is dropped.
        mutating func live(_ id: String, at now: ContinuousClock.Instant) -> Value? {
            guard let entry = byId[id] else { return nil }
            guard entry.expires > now else {
                byId[id] = nil
                return nil
            }
            return entry.value
        }
    }

    public let channel: String
    public let timeToLive: Duration
    public let capacity: Int
    private let entries = Lock(Entries())
    /// Told after rows were dropped: the id, or nil for every row.
    private let forgotten: (@Sendable (String?) -> Void)?

    /// - Parameter forgotten: called after a row is dropped (its id) or every row is (nil), outside the lock:
    ///   for a user that must act on a change at once, not only stop trusting the row.
    public init(
        channel: String, timeToLive: Duration, capacity: Int, forgotten: (@Sendable (String?) -> Void)? = nil
    ) {
        self.channel = channel
        self.timeToLive = timeToLive
        self.capacity = capacity
        self.forgotten = forgotten
    }

    /// True while changes can be heard.
    public var isActive: Bool { entries.withLock { $0.isActive } }

    /// How many rows are remembered now.
    public var count: Int { entries.withLock { $0.byId.count } }

    /// The cached, unexpired values among `ids` (none while the listener is down).
    public func values(_ ids: some Sequence<String>) -> [String: Value] {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard entries.isActive else { return [:] }
            var found: [String: Value] = [:]
            for id in ids { found[id] = entries.live(id, at: now) }
            return found
        }
    }

    /// The cached, unexpired value with this id.
    public func value(_ id: String) -> Value? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard entries.isActive else { return nil }
            return entries.live(id, at: now)
        }
    }

    /// Take this before reading rows; pass it to `remember`.
    public func generation() -> UInt64 {
        entries.withLock { $0.generation }
    }

    /// Remembers rows read from the database, unless one was forgotten since `generation` (the rows may
    /// predate a change whose notification has already been handled).
    public func remember(_ rows: some Collection<(id: String, value: Value)>, readAt generation: UInt64) {
        guard !rows.isEmpty, timeToLive > .zero else { return }
        let expires = ContinuousClock.now + timeToLive
        entries.withLock { entries in
            guard entries.isActive, entries.generation == generation else { return }
            if entries.byId.count + rows.count > capacity { entries.byId.removeAll(keepingCapacity: true) }
            for row in rows.prefix(capacity) { entries.byId[row.id] = Entry(value: row.value, expires: expires) }
        }
    }

    /// Drops one row (it changed).
    public func forget(_ id: String) {
        entries.withLock {
            $0.generation &+= 1
            $0.byId[id] = nil
        }
        forgotten?(id)
    }

    /// Drops every row.
    public func forgetAll() {
        entries.withLock {
            $0.generation &+= 1
            $0.byId.removeAll()
        }
        forgotten?(nil)
    }

    /// The LISTEN service that forgets rows as they change (and everything after a reconnect, or on an
    /// empty payload); run it in the process's service group. Until it listens, the cache stays unused.
    public func listener(url: String) -> PostgresListener {
        let listener = PostgresListener(url: url, channels: [channel]) { [self] channel, payload in
            if channel.isEmpty || payload.isEmpty { forgetAll() } else { forget(payload) }
        }
        // A new listener has heard nothing yet: what an earlier one left is not trusted.
        forgetAll()
        entries.withLock { $0.changes = listener }
        return listener
    }
}
