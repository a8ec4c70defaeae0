import JSON
import Runtime

/// Mints provider tokens: header `{"alg":"ES256","kid":…}`, claims `{"iss":…,"iat":…}`,
/// signed with the team's P-256 key.
public struct ProviderTokenSigner: Sendable {
    public let key: APNsSigningKey
    /// The JWT `kid`: the key's 10-character identifier.
    public let keyId: String
    /// The JWT `iss`: the team identifier.
    public let teamId: String

    public init(key: APNsSigningKey, keyId: String, teamId: String) {
        self.key = key
        self.keyId = keyId
        self.teamId = teamId
    }

    /// A new token issued at `issuedAt` (seconds since 1970).
    public func mint(issuedAt: Int64) throws(APNsError) -> ProviderToken {
        // Members in sorted order, as tokens have always been written.
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyId)]
        let claims: JSONValue = ["iat": .number(Double(issuedAt)), "iss": .string(teamId)]
        let signingInput = Base64URL.encode(header.serialized()) + "." + Base64URL.encode(claims.serialized())
        let signature = try key.signES256(Array(signingInput.utf8))
        return ProviderToken(jwt: signingInput + "." + Base64URL.encode(signature), issuedAt: issuedAt)
    }
}
