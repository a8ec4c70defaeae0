import Runtime

/// A 32-byte AES-256-GCM key for a secret that is not a customer's (the fleet's APNs provider token): it
/// seals text bound to a `context` (a sealed value moved to another context fails to open) and gives a
/// keyed hash for finding or comparing a sealed value without opening it. The bytes never leave this type.
public struct SealingKey: Sendable {
    let bytes: [UInt8]

    /// - Precondition: `bytes` holds exactly 32 bytes (a derived or random key).
    public init(bytes: [UInt8]) {
        precondition(bytes.count == AESGCM.keyBytes, "a sealing key holds 32 bytes")
        self.bytes = bytes
    }

    /// `plain` sealed (base64url of nonce, ciphertext and tag); a new nonce each time.
    public func seal(_ plain: String, context: String) throws -> String {
        Base64URL.encode(try AESGCM.seal(Array(plain.utf8), key: bytes, additionalData: Array(context.utf8)))
    }

    /// The plain text, or nil when `sealed` fails authentication (another key, another context, a change).
    public func open(_ sealed: String, context: String) -> String? {
        guard let bytes = Base64URL.decode(sealed),
            let plain = AESGCM.open(bytes, key: self.bytes, additionalData: Array(context.utf8))
        else { return nil }
        return String(validating: plain, as: UTF8.self)
    }

    /// HMAC-SHA256 of `value` under this key, lowercase hex: equal values give equal hashes, and nobody
    /// without the key can test a guess.
    public func keyedHash(_ value: String) -> String {
        AESGCM.hex(AESGCM.hmacSHA256(Array(value.utf8), key: bytes))
    }
}
