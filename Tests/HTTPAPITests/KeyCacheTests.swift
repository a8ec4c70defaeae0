import APIStores
import Foundation
import HTTPAPI
import Postgres
import TestSupport
import Testing

/// The key cache of `serve`: a live key's row is read once, a revocation from anywhere (another process,
/// the CLI) ends it at once through LISTEN/NOTIFY, and without the listener nothing is cached.
@Suite(.serialized, .timeLimit(.minutes(5))) struct KeyCacheTests {
    @Test func aRevocationFromAnotherProcessEndsACachedKeyAtOnce() async throws {
        // A time to live far longer than the test: only the notification can end the cached entry.
        let cache = APIKeyCache(timeToLive: .seconds(600))
        try await withAPIServer(keyCache: cache, listenForRevocations: true) { api in
            try await eventually("the key cache listening for revocations") { cache.isActive }

            let cached = try await api.key(.technician, "t-1")
            #expect(try await api.call("GET", "/v1/visits", key: cached).status == 200)
            // The row goes without a notification: the process keeps answering from its cache…
            let cachedId = String(cached.split(separator: "_")[1])
            _ = try await api.pool.withConnection { c in try c.query("DELETE FROM api_keys WHERE key_id = \(cachedId)") }
            #expect(try await api.call("GET", "/v1/visits", key: cached).status == 200)
            // …but a wrong secret for a cached id is still refused: the secret is checked on every request.
            let forged = "lv_\(cachedId)_" + String(repeating: "0", count: 48)
            #expect(try await api.call("GET", "/v1/visits", key: forged).status == 401)

            // A revocation the way `livevisits keys revoke` does it, on a connection of its own.
            let revoked = try await api.key(.customer, "c-1")
            #expect(try await api.call("GET", "/v1/visits", key: revoked).status == 200)
            let revokedId = String(revoked.split(separator: "_")[1])
            try await PostgresPool.withPool(PostgresConfiguration(url: api.databaseURL, size: 1)) { other in
                #expect(
                    try await other.withConnection { try APIKeys.revoke(keyId: revokedId, allowedRoles: Role.allCases, on: $0) })
                try await eventually("a key revoked elsewhere refused") {
                    try await api.call("GET", "/v1/visits", key: revoked).status == 401
                }
            }
        }
    }

    /// A technician posts a location fix every 10 s or so and most fixes change nothing: such a fix should
    /// find its key's row cached, not pay a query for it.
    @Test func aLiveKeysRowOutlastsTheGapBetweenLocationFixes() {
        #expect(APIKeyCache().timeToLive >= .seconds(30))
    }

    @Test func withoutTheListenerEveryRequestReadsTheDatabase() async throws {
        let cache = APIKeyCache(timeToLive: .seconds(600))
        try await withAPIServer(keyCache: cache) { api in
            let key = try await api.key(.technician, "t-1")
            #expect(try await api.call("GET", "/v1/visits", key: key).status == 200)
            let keyId = String(key.split(separator: "_")[1])
            _ = try await api.pool.withConnection { c in
                try c.query("UPDATE api_keys SET revoked_at = now() WHERE key_id = \(keyId)")
            }
            #expect(!cache.isActive)
            #expect(try await api.call("GET", "/v1/visits", key: key).status == 401)
        }
    }
}
