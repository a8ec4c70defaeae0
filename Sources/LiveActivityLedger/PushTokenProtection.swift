import Postgres

/// How push tokens are kept at rest. A registration hands the plain token, with the customer it belongs to,
/// to `protect`; the registry stores `stored` and finds the token again only by `lookupHash` (the "same
/// token" check of a registration, a start's target, the claim's "token replaced" check), never by the
/// token itself. The worker opens `stored` just before the send.
///
/// Without one (a registry made without `protection`, or a Live Activity registered without its customer),
/// the token is stored as given and its look-up hash is its md5, as for rows written before tokens were
/// sealed (a row whose `token_hash` is `NULL`).
public protocol PushTokenProtection: Sendable {
    /// The token as it is to be stored and its look-up hash, under `customerId`'s key (on the caller's
    /// connection, in its transaction).
    func protect(_ token: String, customerId: String, on connection: PostgresConnection) throws -> ProtectedPushToken
}

/// A push token as stored: opaque text (sealed) and the keyed hash look-ups compare (lowercase hex).
public struct ProtectedPushToken: Sendable, Hashable {
    public let stored: String
    public let lookupHash: String

    public init(stored: String, lookupHash: String) {
        self.stored = stored
        self.lookupHash = lookupHash
    }
}
