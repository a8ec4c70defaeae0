import COpenSSL
import JSON
import Postgres
import Runtime
import VisitDomain

/// Tracking links (`tracking_links`): one per visit, a URL with a random token that shows the visit's Live
/// Activity card to whoever holds it, without a key. Only the token's SHA-256 is stored; a new link replaces
/// the visit's old one, and a link lapses `lapseSeconds` after its visit ended.
public struct TrackingLinks: Sendable {
    public let pool: PostgresPool

    /// How long after its visit ended a link still answers.
    public static let lapseSeconds: Int64 = 3600

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// What the visit a link is asked for looks like to the caller.
    public struct VisitSeen: Sendable {
        public let customerId: String
        public let technicianId: String
        public let ended: Bool
        public let status: String
    }

    /// The outcome of creating a link.
    public enum Creation: Sendable, Equatable {
        /// Made: the token (the one time it exists outside the caller's URL).
        case created(token: String)
        /// No such visit, or not one the caller may see.
        case notFound
        /// The visit has ended (its status).
        case ended(status: String)
    }

    /// Makes a new link for the visit (replacing its old one), when `mayCreate` allows the caller to.
    public func create(visitId: String, now: Double, mayCreate: @escaping @Sendable (VisitSeen) -> Bool) async throws
        -> Creation
    {
        let token = TrackingLinks.newToken()
        let hash = TrackingLinks.hash(token)
        return try await pool.withTransaction { c in
            guard let seen = try TrackingLinks.visit(visitId, on: c), mayCreate(seen) else { return .notFound }
            guard !seen.ended else { return .ended(status: seen.status) }
            try c.query(
                """
                INSERT INTO tracking_links (visit_id, token_hash, created_at) VALUES (\(visitId), \(hash), \(now))
                ON CONFLICT (visit_id) DO UPDATE SET token_hash = EXCLUDED.token_hash, created_at = EXCLUDED.created_at
                """)
            return .created(token: token)
        }
    }

    /// Revokes the visit's link, if it has one; false when there is no such visit the caller may see.
    public func revoke(visitId: String, mayRevoke: @escaping @Sendable (VisitSeen) -> Bool) async throws -> Bool {
        try await pool.withConnection { c in
            guard let seen = try TrackingLinks.visit(visitId, on: c), mayRevoke(seen) else { return false }
            try c.query("DELETE FROM tracking_links WHERE visit_id = \(visitId)")
            return true
        }
    }

    /// What a link shows: the visit's state from the read model, with what the rules gave it.
    public struct Shown: Sendable {
        public let state: VisitState
        public let staleDate: Int64?
        public let dismissal: VisitDismissal?
    }

    /// The visit behind a presented token, or nil when the token is unknown, revoked or lapsed at `now`
    /// (epoch seconds) — one answer for the three, so a caller cannot tell them apart.
    public func lookup(token: String, now: Int64) async throws -> Shown? {
        guard TrackingLinks.isWellFormed(token) else { return nil }
        let hash = TrackingLinks.hash(token)
        let row = try await pool.withConnection { c in
            try c.query(
                """
                SELECT v.state, v.stale_date, v.dismissal_policy, v.dismissal_date
                FROM tracking_links t JOIN visits v ON v.visit_id = t.visit_id
                WHERE t.token_hash = \(hash)
                """
            ).first
        }
        guard let row, let text = row["state"] else { return nil }
        let state = try VisitState(snapshot: Array(text.utf8))
        if state.hasEnded, now >= Int64(state.statusChangedAt) + TrackingLinks.lapseSeconds { return nil }
        let dismissal = row["dismissal_policy"].flatMap {
            VisitDismissal(policy: $0, date: row.optionalInt64("dismissal_date").map(Int.init))
        }
        return Shown(state: state, staleDate: row.optionalInt64("stale_date"), dismissal: dismissal)
    }

    /// The visit's owner, technician and whether it has ended; nil when there is no such visit.
    static func visit(_ visitId: String, on c: PostgresConnection) throws -> VisitSeen? {
        guard
            let row = try c.query("SELECT customer_id, technician_id, ended, status FROM visits WHERE visit_id = \(visitId)")
                .first
        else { return nil }
        return VisitSeen(
            customerId: try row.string("customer_id"), technicianId: try row.string("technician_id"),
            ended: try row.bool("ended"), status: try row.string("status"))
    }

    /// The length of a token: 32 base64url characters, 24 random bytes (192 bits).
    static let tokenLength = 32

    /// A new token: 24 bytes from OpenSSL's generator, base64url without padding.
    static func newToken() -> String {
        var bytes = [UInt8](repeating: 0, count: 24)
        if RAND_bytes(&bytes, Int32(bytes.count)) != 1 {
            // The system generator (getrandom) is as good; OpenSSL's is preferred only for being the one in use.
            var generator = SystemRandomNumberGenerator()
            for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
        }
        return Base64URL.encode(bytes)
    }

    /// Whether `token` could be one this server gave (a cheap refusal of anything else, before hashing).
    static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == tokenLength
            && token.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
    }

    /// What is stored of a token: its SHA-256, lower-case hex.
    public static func hash(_ token: String) -> String { APIKeys.sha256Hex(Array(token.utf8)) }
}
