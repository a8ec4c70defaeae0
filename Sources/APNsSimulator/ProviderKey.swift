import Foundation

/// A key the simulator trusts for provider tokens (JWT): the ES256 public key of one `.p8` key,
/// optionally bound to the team id (`iss`) and key id (`kid`) a token must carry to use it.
public struct ProviderKey: Sendable {
    /// The team id (`iss`) this key belongs to; `nil` accepts any.
    public var teamID: String?
    /// The key id (`kid`); `nil` accepts any.
    public var keyID: String?
    /// PEM text of the P-256 public key (a PEM private key is accepted too: its public half is used).
    public var publicKeyPEM: String

    public init(teamID: String? = nil, keyID: String? = nil, publicKeyPEM: String) {
        self.teamID = teamID
        self.keyID = keyID
        self.publicKeyPEM = publicKeyPEM
    }

    /// Reads the PEM from a file.
    public static func load(file: String, teamID: String? = nil, keyID: String? = nil) throws(SimulatorError) -> ProviderKey {
        guard let data = FileManager.default.contents(atPath: file), let pem = String(data: data, encoding: .utf8) else {
            throw SimulatorError(.publicKey, "cannot read the public key file \(file)")
        }
        return ProviderKey(teamID: teamID, keyID: keyID, publicKeyPEM: pem)
    }
}
