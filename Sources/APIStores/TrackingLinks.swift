import COpenSSL
import JSON
import Postgres
import Runtime
import VisitDomain

/// Tracking links (`tracking_links`): one per visit, a URL with a random token that shows the visit's Live
/// Activity card to whoever holds it, without a key. Only the token's SHA-256 is stored; a new link replaces
/// the visit's old one, and a link lapses `lapseSeconds` after its visit ended.
///
/// Look-ups are answered from `cards` (the links' memory, kept current by the event log) while it runs and can
/// be trusted, and from the database otherwise. A replaced or revoked link is announced on `channel` (its hash)
/// in the transaction that drops it, so that every process's memory forgets it.
public struct TrackingLinks: Sendable {
    public let pool: PostgresPool
    /// The memory that answers look-ups without the database; unused until its services run.
    public let cards: TrackingCards

    /// How long after its visit ended a link still answers.
    public static let lapseSeconds: Int64 = 3600
    /// Where a dropped link's hash is announced.
    public static let channel = "livevisits_tracking_links"

    public init(pool: PostgresPool, cards: TrackingCards? = nil) {
        self.pool = pool
        self.cards = cards ?? TrackingCards(pool: pool)
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
        let (creation, replaced) = try await pool.withTransaction { c -> (Creation, String?) in
            guard let seen = try TrackingLinks.visit(visitId, on: c), mayCreate(seen) else { return (.notFound, nil) }
            guard !seen.ended else { return (.ended(status: seen.status), nil) }
            let old = try c.query(
                """
                SELECT token_hash, pg_notify(\(TrackingLinks.channel), token_hash)
                FROM tracking_links WHERE visit_id = \(visitId) FOR UPDATE
                """
            ).first?["token_hash"]
            try c.query(
                """
                INSERT INTO tracking_links (visit_id, token_hash, created_at) VALUES (\(visitId), \(hash), \(now))
                ON CONFLICT (visit_id) DO UPDATE SET token_hash = EXCLUDED.token_hash, created_at = EXCLUDED.created_at
                """)
            return (.created(token: token), old)
        }
        if let replaced { cards.forget(tokenHash: replaced) }
        return creation
    }

    /// Revokes the visit's link, if it has one; false when there is no such visit the caller may see.
    public func revoke(visitId: String, mayRevoke: @escaping @Sendable (VisitSeen) -> Bool) async throws -> Bool {
        let (found, revoked) = try await pool.withConnection { c -> (Bool, String?) in
            guard let seen = try TrackingLinks.visit(visitId, on: c), mayRevoke(seen) else { return (false, nil) }
            let gone = try c.query(
                """
                WITH gone AS (DELETE FROM tracking_links WHERE visit_id = \(visitId) RETURNING token_hash)
                SELECT token_hash, pg_notify(\(TrackingLinks.channel), token_hash) FROM gone
                """
            ).first?["token_hash"]
            return (true, gone)
        }
        if let revoked { cards.forget(tokenHash: revoked) }
        return found
    }

    /// What a link shows: the visit's state from the read model, with what the rules gave it.
    public struct Shown: Sendable {
        public let state: VisitState
        public let staleDate: Int64?
        public let dismissal: VisitDismissal?

        /// What changes whenever the answer drawn from it may: the visit's version.
        public var version: Int { state.version }

        /// Whether the link has lapsed at `now` (epoch seconds): its visit ended `lapseSeconds` ago or more.
        func hasLapsed(at now: Int64) -> Bool {
            state.hasEnded && now >= Int64(state.statusChangedAt) + TrackingLinks.lapseSeconds
        }
    }

    /// The visit behind a presented token, or nil when the token is unknown, revoked or lapsed at `now`
    /// (epoch seconds) — one answer for the three, so a caller cannot tell them apart. From `cards` when it
    /// holds the link, else from the database (and then remembered there).
    public func lookup(token: String, now: Int64) async throws -> Shown? {
        guard TrackingLinks.isWellFormed(token) else { return nil }
        let hash = TrackingLinks.hash(token)
        if let shown = cards.card(tokenHash: hash) { return shown.hasLapsed(at: now) ? nil : shown }
        let generation = cards.generation()
        let row = try await pool.withConnection { c in
            try c.query(
                """
                SELECT \(TrackingLinks.cardColumns)
                FROM tracking_links t JOIN visits v ON v.visit_id = t.visit_id
                WHERE t.token_hash = \(hash)
                """
            ).first
        }
        guard let row, let shown = try TrackingLinks.shown(row) else { return nil }
        cards.remember(tokenHash: hash, card: shown, readAt: generation)
        return shown.hasLapsed(at: now) ? nil : shown
    }

    /// How long `waitForChange` waits at most.
    public var holdSeconds: Double { cards.holdSeconds }

    /// Waits until what `shown` drew for `token` may have changed (see `TrackingCards.waitForChange`): a newer
    /// version, the link dropped, the hold's deadline; at once when the memory does not answer.
    public func waitForChange(token: String, beyond shown: Shown) async {
        await cards.waitForChange(
            visitId: shown.state.visitId, tokenHash: TrackingLinks.hash(token), beyond: shown.version)
    }

    /// The columns of `visits v` a card is drawn from.
    static let cardColumns: PostgresQuery = "v.state, v.stale_date, v.dismissal_policy, v.dismissal_date"

    /// A card from a row of `cardColumns`; nil without a state.
    static func shown(_ row: PostgresRow) throws -> Shown? {
        guard let text = row["state"] else { return nil }
        let state = try VisitState(snapshot: Array(text.utf8))
        let dismissal = row["dismissal_policy"].flatMap {
            VisitDismissal(policy: $0, date: row.optionalInt64("dismissal_date").map(Int.init))
        }
        return Shown(state: state, staleDate: row.optionalInt64("stale_date"), dismissal: dismissal)
    }

    /// The cards of these visits (those that still have a row).
    static func cards(visitIds: [String], on c: PostgresConnection) throws -> [Shown] {
        try c.query("SELECT \(cardColumns) FROM visits v WHERE v.visit_id = ANY(\(visitIds)::text[])").rows.compactMap {
            try shown($0)
        }
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
