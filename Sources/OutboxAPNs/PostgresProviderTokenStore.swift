import APNs
import PersonalData
import Postgres

/// The fleet's shared APNs provider token: a row per (team, key) in `apns_provider_tokens`, replaced by
/// compare-and-set on the issue time and the token's keyed hash, so every process on one database presents
/// the same JWT.
///
/// The JWT is a bearer secret, so the row holds it sealed (`sealed_jwt`) under a key derived from the APNs
/// signing key (`APNsSigningKey.derivedKey`): every process presenting the token holds that file, with or
/// without a personal-data key file, and a database dump alone shows nothing usable. A row that does not
/// open (sealed under another `.p8` with the same key id) reads as no token, and is replaced.
public struct PostgresProviderTokenStore: ProviderTokenStore {
    public let pool: PostgresPool
    public let teamId: String
    public let keyId: String
    let sealing: SealingKey

    /// What `derivedKey` is asked for; also the sealed value's context (with the team and key ids).
    static let purpose = "livevisits-apns-provider-token:v1"

    /// - Parameter sealingKey: the key the JWT is sealed under (`init(pool:signer:)` derives it).
    public init(pool: PostgresPool, teamId: String, keyId: String, sealingKey: SealingKey) {
        self.pool = pool
        self.teamId = teamId
        self.keyId = keyId
        self.sealing = sealingKey
    }

    /// The store of `signer`'s team and key, sealing under a key derived from its signing key.
    public init(pool: PostgresPool, signer: ProviderTokenSigner) throws {
        self.init(
            pool: pool, teamId: signer.teamId, keyId: signer.keyId,
            sealingKey: SealingKey(bytes: try signer.key.derivedKey(purpose: PostgresProviderTokenStore.purpose)))
    }

    var context: String { "\(PostgresProviderTokenStore.purpose):\(teamId):\(keyId)" }

    public func load() async throws -> ProviderToken? {
        let (teamId, keyId) = (self.teamId, self.keyId)
        return try await pool.withConnection { c in
            try c.query(
                "SELECT sealed_jwt, issued_at FROM apns_provider_tokens WHERE team_id = \(teamId) AND key_id = \(keyId)"
            ).first.flatMap { try opened($0) }
        }
    }

    public func compareAndSet(expected: ProviderToken?, new: ProviderToken) async throws -> ProviderToken {
        let (teamId, keyId) = (self.teamId, self.keyId)
        let sealed = try sealing.seal(new.jwt, context: context)
        let hash = sealing.keyedHash(new.jwt)
        return try await pool.withTransaction { c in
            let won: Bool
            if let expected {
                won = try !c.query(
                    """
                    UPDATE apns_provider_tokens
                    SET sealed_jwt = \(sealed), jwt_hash = \(hash), issued_at = \(new.issuedAt), updated_at = now()
                    WHERE team_id = \(teamId) AND key_id = \(keyId) AND issued_at = \(expected.issuedAt)
                      AND jwt_hash = \(sealing.keyedHash(expected.jwt))
                    RETURNING 1
                    """
                ).isEmpty
            } else {
                won = try !c.query(
                    """
                    INSERT INTO apns_provider_tokens (team_id, key_id, sealed_jwt, jwt_hash, issued_at)
                    VALUES (\(teamId), \(keyId), \(sealed), \(hash), \(new.issuedAt))
                    ON CONFLICT DO NOTHING RETURNING 1
                    """
                ).isEmpty
            }
            if won { return new }
            let row = try c.query(
                """
                SELECT sealed_jwt, issued_at FROM apns_provider_tokens WHERE team_id = \(teamId) AND key_id = \(keyId)
                FOR UPDATE
                """
            ).first
            guard let row else { return new }
            if let stored = try opened(row) { return stored }
            // Sealed under another signing key file: this process cannot present it, so it takes the row.
            try c.query(
                """
                UPDATE apns_provider_tokens
                SET sealed_jwt = \(sealed), jwt_hash = \(hash), issued_at = \(new.issuedAt), updated_at = now()
                WHERE team_id = \(teamId) AND key_id = \(keyId)
                """)
            return new
        }
    }

    /// The row's token, or nil when it does not open under this process's key.
    private func opened(_ row: PostgresRow) throws -> ProviderToken? {
        guard let jwt = sealing.open(try row.string("sealed_jwt"), context: context) else { return nil }
        return ProviderToken(jwt: jwt, issuedAt: try row.int64("issued_at"))
    }
}
