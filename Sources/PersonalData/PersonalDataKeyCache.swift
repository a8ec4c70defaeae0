import Postgres
import Synchronization

/// Customers' data keys recently read and unwrapped, so that opening an answer (or a start push) does not
/// pay a pooled round trip to `personal_data_keys` and an unwrap for every key it names. Only keys that
/// exist are remembered (an erased or unreadable key is read again every time), for `timeToLive` at most,
/// `capacity` of them at most (more, and the cache starts over).
///
/// Erasure stays immediate in every process, as revocation does for `APIKeyCache`: `PersonalDataKeys.destroy`
/// announces the destroyed key id on `PersonalDataKeys.erasureChannel` in the erasing transaction, and
/// `listener(url:)` (a service of every process that opens personal data) drops it here the moment the
/// notification arrives. The cache is only used while that listener is listening: without one, while it
/// reconnects, and after it reconnected (notifications may have been missed, so it forgets everything)
/// every answer reads the database.
public final class PersonalDataKeyCache: Sendable {
    private struct Entry {
        let key: PersonalDataKeys.DataKey
        let expires: ContinuousClock.Instant
    }

    private struct Entries {
        var byId: [String: Entry] = [:]
        /// Moves on every forget: a key read before an erasure is not remembered after it.
        var generation: UInt64 = 0
    }

    public let timeToLive: Duration
    /// More keys than this and the cache starts over (a bound on memory: some 200 bytes a key).
    public let capacity: Int
    private let entries = Mutex(Entries())
    private let erasures = Mutex<PostgresListener?>(nil)

    public init(timeToLive: Duration = .seconds(60), capacity: Int = 10_000) {
        self.timeToLive = timeToLive
        self.capacity = capacity
    }

    /// True while erasures can be heard.
    public var isActive: Bool {
        erasures.withLock { $0 }?.isListening.load(ordering: .sequentiallyConsistent) ?? false
    }

    /// How many keys are remembered now (for tests and the benchmark).
    public var count: Int { entries.withLock { $0.byId.count } }

    /// The cached keys among `ids` that have not expired (none while the listener is down).
    func keys(_ ids: some Sequence<String>) -> [String: PersonalDataKeys.DataKey] {
        guard isActive else { return [:] }
        let now = ContinuousClock.now
        return entries.withLock { entries in
            var found: [String: PersonalDataKeys.DataKey] = [:]
            for id in ids {
                guard let entry = entries.byId[id] else { continue }
                if entry.expires > now {
                    found[id] = entry.key
                } else {
                    entries.byId[id] = nil
                }
            }
            return found
        }
    }

    /// Take this before reading keys' rows; pass it to `remember`.
    func generation() -> UInt64 {
        entries.withLock { $0.generation }
    }

    /// Remembers keys read from the database, unless a key was forgotten since `generation` (the rows may
    /// predate an erasure whose notification has already been handled).
    func remember(_ keys: some Collection<PersonalDataKeys.DataKey>, readAt generation: UInt64) {
        guard !keys.isEmpty, timeToLive > .zero, isActive else { return }
        let expires = ContinuousClock.now + timeToLive
        entries.withLock { entries in
            guard entries.generation == generation else { return }
            if entries.byId.count + keys.count > capacity { entries.byId.removeAll(keepingCapacity: true) }
            for key in keys.prefix(capacity) { entries.byId[key.id] = Entry(key: key, expires: expires) }
        }
    }

    /// Drops one key (it was destroyed).
    public func forget(_ keyId: String) {
        entries.withLock {
            $0.generation &+= 1
            $0.byId[keyId] = nil
        }
    }

    /// Drops every key.
    public func forgetAll() {
        entries.withLock {
            $0.generation &+= 1
            $0.byId.removeAll()
        }
    }

    /// The LISTEN service that forgets keys as they are destroyed (and everything after a reconnect, or on
    /// an empty payload); run it in the process's service group. Until it listens, the cache stays unused.
    public func listener(url: String) -> PostgresListener {
        let listener = PostgresListener(url: url, channels: [PersonalDataKeys.erasureChannel]) { [self] channel, payload in
            if channel.isEmpty || payload.isEmpty { forgetAll() } else { forget(payload) }
        }
        // A new listener has heard nothing yet: what an earlier one left is not trusted.
        forgetAll()
        erasures.withLock { $0 = listener }
        return listener
    }
}
