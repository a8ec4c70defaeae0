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

    public let timeToLive: Duration
    private let entries = Mutex<[String: Entry]>([:])
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
            guard let entry = entries[keyId] else { return nil }
            guard entry.expires > now else {
                entries[keyId] = nil
                return nil
            }
            return entry.key
        }
    }

    func remember(_ key: APIKeys.StoredKey) {
        guard timeToLive > .zero, isActive else { return }
        let expires = ContinuousClock.now + timeToLive
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key.keyId] = Entry(key: key, expires: expires)
        }
    }

    /// Drops one key (it was revoked).
    public func forget(_ keyId: String) {
        _ = entries.withLock { $0.removeValue(forKey: keyId) }
    }

    /// Drops every key.
    public func forgetAll() {
        entries.withLock { $0.removeAll() }
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
