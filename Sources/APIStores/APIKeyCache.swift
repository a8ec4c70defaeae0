import Foundation
import Postgres

/// Live API keys recently read from the database, so that a request does not pay a query (and a trip to
/// a pooled connection) just to learn who is calling. The secret is still hashed and compared with the
/// stored hash on every request; only the row is remembered, for `timeToLive` seconds at most.
///
/// Revocation stays immediate: `APIKeys.revoke` announces the key id on `APIKeys.revocationChannel`, and
/// `listener(url:)` (a service of every API process) drops it here the moment the notification arrives.
/// The cache is only used while that listener is listening: without one (or while it reconnects, and
/// after it reconnected, since notifications may have been missed) every request reads the database.
public final class APIKeyCache: Sendable {
    /// The rows, heard from `APIKeys.revocationChannel` (capacity far above real fleets' needs).
    private let rows: ListenedCache<APIKeys.StoredKey>

    public var timeToLive: Duration { rows.timeToLive }

    public init(timeToLive: Duration = .seconds(5)) {
        rows = ListenedCache(channel: APIKeys.revocationChannel, timeToLive: timeToLive, capacity: 10_000)
    }

    /// True while revocations can be heard.
    public var isActive: Bool { rows.isActive }

    /// The cached live key with this id, if it has not expired.
    public func key(_ keyId: String) -> APIKeys.StoredKey? { rows.value(keyId) }

    /// Take this before reading a key's row; pass it to `remember`.
    public func generation() -> UInt64 { rows.generation() }

    /// Remembers a row read from the database, unless a key was forgotten since `generation` (the row may
    /// predate a revocation whose notification has already been handled).
    public func remember(_ key: APIKeys.StoredKey, readAt generation: UInt64) {
        rows.remember(CollectionOfOne((id: key.keyId, value: key)), readAt: generation)
    }

    /// Drops one key (it was revoked).
    public func forget(_ keyId: String) { rows.forget(keyId) }

    /// Drops every key.
    public func forgetAll() { rows.forgetAll() }

    /// The LISTEN service that forgets keys as they are revoked (and everything after a reconnect); run it
    /// in the process's service group. Until it listens, the cache stays unused.
    public func listener(url: String) -> PostgresListener { rows.listener(url: url) }
}
