import Postgres
import Runtime

/// The API keys' use cases, on a pool: minting (`POST /v1/keys` and `livevisits keys create` alike), the
/// caller behind a presented key, revocation, and the audit's list (`GET /v1/keys` and `livevisits keys
/// list` alike). Live keys are read through `cache` while it hears revocations; a key revoked here is
/// dropped from it at once, and from other processes' caches when the revocation's notification reaches them.
public struct APIKeyRegistry: Sendable {
    public let pool: PostgresPool
    public let cache: APIKeyCache
    /// Counts the key look-ups that went to the database (`livevisits_api_key_lookups_total{result}`).
    public let metrics: Metrics

    public init(pool: PostgresPool, cache: APIKeyCache = APIKeyCache(), metrics: Metrics = .shared) {
        self.pool = pool
        self.cache = cache
        self.metrics = metrics
    }

    /// The counter of key look-ups that read the database, by what they found (`live`, `missing`).
    public static let lookupsMetric = "livevisits_api_key_lookups_total"

    /// Mints a key (`APIKeys.mint`): shown once in what this returns, only its hash stored. Throws
    /// `APIKeys.KeyError` when the role needs a subject, or the subject or name is unusable.
    public func mint(role: Role, subject: String?, name: String? = nil, createdBy: String?) async throws -> MintedKey {
        let minted = try await pool.withConnection {
            try APIKeys.mint(role: role, subject: subject, name: name, createdBy: createdBy, on: $0)
        }
        cache.forgetMiss(minted.keyId)
        return minted
    }

    /// The caller a presented key belongs to, or nil (malformed, unknown, revoked or the wrong secret). The
    /// secret is hashed and compared on every call; only the key's row may come from the cache, and an id
    /// found without a live key is not asked about again for a while (`APIKeyCache.isKnownMissing`).
    public func caller(presenting presented: String) async throws -> Caller? {
        guard let (keyId, secret) = APIKeys.parse(presented) else { return nil }
        var stored = cache.key(keyId)
        if stored == nil {
            if cache.isKnownMissing(keyId) { return nil }
            let generation = cache.generation()
            stored = try await pool.withConnection { try APIKeys.lookup(keyId: keyId, on: $0) }
            metrics.increment(
                APIKeyRegistry.lookupsMetric, help: "API key look-ups that read the database, by what they found.",
                labels: ["result": stored == nil ? "missing" : "live"])
            if let stored { cache.remember(stored, readAt: generation) } else { cache.rememberMiss(keyId) }
        }
        return stored?.caller(presenting: secret)
    }

    /// Every key (revoked ones too), newest first, for an audit: of `role` only when given, `limit` at most.
    /// Never a key or its hash.
    public func list(role: Role? = nil, limit: Int? = nil) async throws -> [KeyStore.ListedKey] {
        try await pool.withConnection { try KeyStore.list(role: role?.rawValue, limit: limit, on: $0) }
    }

    /// Revokes a live key whose role is one of `allowedRoles`; false when there is none. This process's
    /// cache forgets it at once, the others' when the announcement arrives.
    public func revoke(keyId: String, allowedRoles: [Role]) async throws -> Bool {
        let revoked = try await pool.withConnection {
            try APIKeys.revoke(keyId: keyId, allowedRoles: allowedRoles, on: $0)
        }
        if revoked { cache.forget(keyId) }
        return revoked
    }
}
