import Foundation
import Postgres
import Synchronization

/// Live API keys recently read from the database, so that a request does not pay a query (and a trip to
/// a pooled connection) just to learn who is calling. The secret is still hashed and compared with the
/// stored hash on every request; only the row is remembered, for `timeToLive` seconds at most.
///
/// Revocation stays immediate: `APIKeys.revoke` announces the key id on `APIKeys.revocationChannel`, and
/// `listener(url:)` (a service of every API process) drops it here the moment the notification arrives.
/// The cache is only used while that listener is listening: without one (or while it reconnects, and
/// after it reconnected, since notifications may have been missed) every request reads the database.
public final class APIKeyCache: Sendable {
    private struct Entry {
        let key: APIKeys.StoredKey
        let expires: ContinuousClock.Instant
    }

    private struct Entries {
        var byId: [String: Entry] = [:]
        /// Moves on every forget: a row read before a revocation is not remembered after it.
        var generation: UInt64 = 0
    }

    public let timeToLive: Duration
    private let entries = Mutex(Entries())
    /// More keys than this and the cache starts over (a bound on memory, far above real fleets' needs).
    private let capacity = 10_000

    private let revocations = Mutex<PostgresListener?>(nil)

    public init(timeToLive: Duration = .seconds(5)) {
        self.timeToLive = timeToLive
    }

    /// True while revocations can be heard.
    public var isActive: Bool {
        revocations.withLock { $0 }?.isListening.load(ordering: .sequentiallyConsistent) ?? false
    }

    /// The cached live key with this id, if it has not expired.
    func key(_ keyId: String) -> APIKeys.StoredKey? {
        guard isActive else { return nil }
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries.byId[keyId] else { return nil }
            guard entry.expires > now else {
                entries.byId[keyId] = nil
                return nil
            }
            return entry.key
        }
    }

    /// Take this before reading a key's row; pass it to `remember`.
    func generation() -> UInt64 {
        entries.withLock { $0.generation }
    }

    /// Remembers a row read from the database, unless a key was forgotten since `generation` (the row may
    /// predate a revocation whose notification has already been handled).
    func remember(_ key: APIKeys.StoredKey, readAt generation: UInt64) {
        guard timeToLive > .zero, isActive else { return }
        let expires = ContinuousClock.now + timeToLive
        entries.withLock { entries in
            guard entries.generation == generation else { return }
            if entries.byId.count >= capacity { entries.byId.removeAll(keepingCapacity: true) }
            entries.byId[key.keyId] = Entry(key: key, expires: expires)
        }
    }

    /// Drops one key (it was revoked).
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

    /// The LISTEN service that forgets keys as they are revoked (and everything after a reconnect); run it
    /// in the process's service group. Until it listens, the cache stays unused.
    public func listener(url: String) -> PostgresListener {
        let listener = PostgresListener(url: url, channels: [APIKeys.revocationChannel]) { [self] channel, payload in
            if channel.isEmpty || payload.isEmpty { forgetAll() } else { forget(payload) }
        }
        revocations.withLock { $0 = listener }
        return listener
    }
}
