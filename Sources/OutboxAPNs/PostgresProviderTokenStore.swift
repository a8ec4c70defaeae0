import APNs
import Postgres

/// The fleet's shared APNs provider token: a row per (team, key) in `apns_provider_tokens`, replaced by
/// compare-and-set on the issue time, so every process on one database presents the same JWT.
public struct PostgresProviderTokenStore: ProviderTokenStore {
    public let pool: PostgresPool
    public let teamId: String
    public let keyId: String

    public init(pool: PostgresPool, teamId: String, keyId: String) {
        self.pool = pool
        self.teamId = teamId
        self.keyId = keyId
    }

    public func load() async throws -> ProviderToken? {
        let (teamId, keyId) = (self.teamId, self.keyId)
        return try await pool.withConnection { c in
            try c.query("SELECT jwt, issued_at FROM apns_provider_tokens WHERE team_id = \(teamId) AND key_id = \(keyId)")
                .first.map { ProviderToken(jwt: try $0.string("jwt"), issuedAt: try $0.int64("issued_at")) }
        }
    }

    public func compareAndSet(expected: ProviderToken?, new: ProviderToken) async throws -> ProviderToken {
        let (teamId, keyId) = (self.teamId, self.keyId)
        return try await pool.withTransaction { c in
            let won: Bool
            if let expected {
                won = try !c.query(
                    """
                    UPDATE apns_provider_tokens SET jwt = \(new.jwt), issued_at = \(new.issuedAt), updated_at = now()
                    WHERE team_id = \(teamId) AND key_id = \(keyId) AND issued_at = \(expected.issuedAt) AND jwt = \(expected.jwt)
                    RETURNING 1
                    """
                ).isEmpty
            } else {
                won = try !c.query(
                    """
                    INSERT INTO apns_provider_tokens (team_id, key_id, jwt, issued_at) VALUES (\(teamId), \(keyId), \(new.jwt), \(new.issuedAt))
                    ON CONFLICT DO NOTHING RETURNING 1
                    """
                ).isEmpty
            }
            if won { return new }
            let row = try c.query(
                "SELECT jwt, issued_at FROM apns_provider_tokens WHERE team_id = \(teamId) AND key_id = \(keyId)"
            ).first
            guard let row else { return new }
            return ProviderToken(jwt: try row.string("jwt"), issuedAt: try row.int64("issued_at"))
        }
    }
}
