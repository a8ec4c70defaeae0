import Foundation

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
        let header = Self.json(["alg": "ES256", "kid": keyId])
        let claims = Self.json(["iss": teamId, "iat": issuedAt])
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.signES256(Array(signingInput.utf8))
        return ProviderToken(jwt: signingInput + "." + Base64URL.encode(signature), issuedAt: issuedAt)
    }

    private static func json(_ object: [String: any Sendable]) -> [UInt8] {
        // Only strings and integers go in: serialization cannot fail.
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return [UInt8](data)
    }
}
