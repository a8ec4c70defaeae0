import Postgres

/// The `api_keys` table: minted keys (only the SHA-256 of each secret is kept), the live key behind a
/// caller, revocation announced to every process. The key format, hashing and roles are `APIKeys`'.
public enum KeyStore {
    /// A live (not revoked) key as stored.
    public struct Row: Sendable, Equatable {
        public let keyId: String
        /// Lower-case hex SHA-256 of the secret.
        public let secretHash: String
        public let role: String
        public let subject: String?
        /// The display name of the person the key is for.
        public let name: String?
    }

    /// The channel a revocation is announced on (payload: the key id), so that every process drops the key
    /// from its cache at once.
    public static let revocationChannel = "livevisits_keys"

    /// Stores a newly minted key.
    public static func insert(
        keyId: String, secretHash: String, role: String, subject: String?, name: String? = nil, createdBy: String?,
        on connection: PostgresConnection
    ) throws {
        try connection.query(
            """
            INSERT INTO api_keys (key_id, secret_hash, role, subject, name, created_by)
            VALUES (\(keyId), \(secretHash), \(role), \(subject), \(name), \(createdBy))
            """)
    }

    /// The live key with this id, or nil.
    public static func live(keyId: String, on connection: PostgresConnection) throws -> Row? {
        guard
            let row = try connection.query(
                """
                SELECT secret_hash, role, subject, name FROM api_keys WHERE key_id = \(keyId) AND revoked_at IS NULL
                """
            ).first
        else { return nil }
        return Row(
            keyId: keyId, secretHash: try row.string("secret_hash"), role: try row.string("role"), subject: row["subject"],
            name: row["name"])
    }

    /// A key as an audit shows it (`livevisits keys list`, `GET /v1/keys`): who it is for and when it was
    /// made and revoked; never the key or its hash.
    public struct ListedKey: Sendable, Equatable {
        public let keyId: String
        public let role: String
        public let subject: String?
        /// The display name of the person the key is for.
        public let name: String?
        /// The key id that minted it over the API, or `cli`.
        public let createdBy: String?
        /// Seconds since 1970.
        public let createdAt: Double
        public let revokedAt: Double?
    }

    /// Keys, newest first (then by id, so the order is stable), of one role when given, `limit` at most.
    public static func list(role: String?, limit: Int?, on connection: PostgresConnection) throws -> [ListedKey] {
        try connection.query(
            """
            SELECT key_id, role, subject, name, created_by, extract(epoch FROM created_at)::float8 AS created_at,
                   extract(epoch FROM revoked_at)::float8 AS revoked_at
            FROM api_keys WHERE \(role)::text IS NULL OR role = \(role)
            ORDER BY created_at DESC, key_id LIMIT \(limit)
            """
        ).rows.map { row in
            ListedKey(
                keyId: try row.string("key_id"), role: try row.string("role"), subject: row["subject"], name: row["name"],
                createdBy: row["created_by"], createdAt: try row.double("created_at"),
                revokedAt: row["revoked_at"].flatMap(Double.init))
        }
    }

    /// Revokes a live key whose role is one of `roles`, and announces it on `revocationChannel` in the same
    /// statement; false when there is no such key.
    public static func revoke(keyId: String, roles: [String], on connection: PostgresConnection) throws -> Bool {
        try !connection.query(
            """
            WITH revoked AS (
                UPDATE api_keys SET revoked_at = now()
                WHERE key_id = \(keyId) AND revoked_at IS NULL AND role = ANY(\(roles)::text[])
                RETURNING key_id
            )
            SELECT pg_notify(\(revocationChannel), key_id) FROM revoked
            """
        ).isEmpty
    }
}
