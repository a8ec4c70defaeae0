/// A provider authentication token: the ES256 JWT presented as `authorization: bearer …`,
/// with the `iat` it was issued at. Printing one never shows the JWT.
public struct ProviderToken: Sendable, Hashable, CustomStringConvertible {
    /// The compact JWS (`header.claims.signature`). A secret: never log it.
    public let jwt: String
    /// The `iat` claim, seconds since 1970.
    public let issuedAt: Int64

    public init(jwt: String, issuedAt: Int64) {
        self.jwt = jwt
        self.issuedAt = issuedAt
    }

    /// Seconds since the token was issued, at `now`.
    public func age(at now: Double) -> Double { now - Double(issuedAt) }

    public var description: String { "ProviderToken(iat: \(issuedAt), jwt: redacted)" }
}
