import Foundation
import Postgres
import Runtime

/// Live API keys recently read from the database, so that a request does not pay a query (and a trip to
/// a pooled connection) just to learn who is calling. The secret is still hashed and compared with the
/// stored hash on every request; only the row is remembered, for `timeToLive` seconds at most.
///
/// Revocation stays immediate: `APIKeys.revoke` announces the key id on `APIKeys.revocationChannel`, and
/// `listener(url:)` (a service of every API process) drops it here the moment the notification arrives.
/// The cache is only used while that listener is listening: without one (or while it reconnects, and
/// after it reconnected, since notifications may have been missed) every request reads the database.
///
/// Key ids that have no live key are remembered too (`isKnownMissing`), for `missTimeToLive` and
/// `missCapacity` of them at most (more, and those start over), so that presenting an unknown id costs
/// one query and not one per request. A miss needs no notification to end: a key id is 64 random bits
/// drawn when the key is minted (`APIKeys.mint`), so a key minted later, here or in another process,
/// has an id nobody presented before (a 1 in 2^64 chance per id presented); this process forgets the
/// id it mints all the same (`forgetMiss`). Misses are used whether or not the listener listens, since
/// revocations only ever turn a hit into a miss. The time bound covers ids not minted here (a row put
/// back from a backup).
public final class APIKeyCache: Sendable {
    /// The rows, heard from `APIKeys.revocationChannel`. The time to live (ten minutes) outlasts the gap
    /// between a technician's location fixes (one every 10 s or so, most of which change nothing and should
    /// cost no query) many times over: with a minute, a 10,000-technician fleet's keys were each read again
    /// every minute, some 170 reads a second. A key's row changes only when it is revoked, which is heard at
    /// once; the time only bounds what a missed notification could leave (a reconnect forgets every row).
    /// The capacity holds every key such a fleet and its customers use in that time several times over (past
    /// it the cache starts over: every caller's row read once again).
    private let rows: ListenedCache<APIKeys.StoredKey>
    /// Key ids with no live key, and until when that is trusted.
    private let misses = Lock<[String: ContinuousClock.Instant]>([:])

    public var timeToLive: Duration { rows.timeToLive }
    /// How long an id found without a live key is answered as such without asking again.
    public let missTimeToLive: Duration
    /// The most missing ids remembered.
    public let missCapacity: Int

    public init(timeToLive: Duration = .seconds(600), missTimeToLive: Duration = .seconds(300), missCapacity: Int = 10_000) {
        rows = ListenedCache(channel: APIKeys.revocationChannel, timeToLive: timeToLive, capacity: 50_000)
        self.missTimeToLive = missTimeToLive
        self.missCapacity = missCapacity
    }

    /// True when `keyId` was found without a live key less than `missTimeToLive` ago.
    public func isKnownMissing(_ keyId: String) -> Bool {
        let now = ContinuousClock.now
        return misses.withLock { misses in
            guard let until = misses[keyId] else { return false }
            if until > now { return true }
            misses[keyId] = nil
            return false
        }
    }

    /// Remembers that `keyId` has no live key.
    public func rememberMiss(_ keyId: String) {
        guard missTimeToLive > .zero else { return }
        let until = ContinuousClock.now + missTimeToLive
        misses.withLock { misses in
            if misses.count >= missCapacity { misses.removeAll(keepingCapacity: true) }
            misses[keyId] = until
        }
    }

    /// Forgets that `keyId` had no live key (it was just minted).
    public func forgetMiss(_ keyId: String) {
        misses.withLock { $0[keyId] = nil }
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
