/// What the simulator keeps of a provider token (JWT): its header and claims, never the token itself.
public struct ProviderTokenSummary: Sendable, Equatable, Codable {
    /// JWT header `alg` (APNs wants `ES256`).
    public var algorithm: String?
    /// JWT header `kid`: the key id.
    public var keyID: String?
    /// JWT claim `iss`: the team id.
    public var issuer: String?
    /// JWT claim `iat`: issued at, seconds since 1970.
    public var issuedAt: Int64?

    public init(algorithm: String? = nil, keyID: String? = nil, issuer: String? = nil, issuedAt: Int64? = nil) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.issuer = issuer
        self.issuedAt = issuedAt
    }
}
