import COpenSSL
import Foundation

/// The team's APNs auth key (the `.p8` file): an EC private key on P-256 used to sign provider tokens.
///
/// The key material never leaves this object and is never printed.
public final class APNsSigningKey: Sendable, CustomStringConvertible {
    // Immutable after init; OpenSSL 3 allows concurrent signing with one EVP_PKEY and one
    // EVP_MD_CTX per call, which is what `sign` does. Freed only in deinit.
    nonisolated(unsafe) private let pkey: OpaquePointer

    /// Reads a PEM private key (PKCS#8 `.p8` or SEC1) and checks that it is an EC key on P-256.
    /// - Parameter variable: the environment variable named in errors.
    public init(pem: [UInt8], variable: String = "LIVEVISITS_APNS_KEY_FILE") throws(APNsError) {
        ERR_clear_error()
        let loaded: OpaquePointer? = pem.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key = loaded else {
            ERR_clear_error()
            throw APNsError(
                code: .invalidKey, message: "\(variable) holds no readable PEM private key", variable: variable)
        }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            EVP_PKEY_free(key)
            throw APNsError(
                code: .keyNotP256, message: "\(variable) is not an EC key; APNs needs an ES256 (P-256) key",
                variable: variable)
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        let gotName = EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1
        let group = gotName ? String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        guard group == "prime256v1" || group == "P-256" else {
            EVP_PKEY_free(key)
            throw APNsError(
                code: .keyNotP256, message: "\(variable) is an EC key on \(group), not P-256 as ES256 requires",
                variable: variable)
        }
        pkey = key
    }

    /// Reads the key from a file; errors name `variable` and never include the file's content.
    public convenience init(contentsOfFile path: String, variable: String = "LIVEVISITS_APNS_KEY_FILE")
        throws(APNsError)
    {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw APNsError(
                code: .keyFileUnreadable, message: "\(variable) names a file that cannot be read: \(path)",
                variable: variable)
        }
        try self.init(pem: [UInt8](data), variable: variable)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Signs `message` with ECDSA P-256 / SHA-256 and returns the JWS form: 64 bytes, r || s.
    public func signES256(_ message: [UInt8]) throws(APNsError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw Self.signingError("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey) == 1 else {
            throw Self.signingError("EVP_DigestSignInit")
        }
        var der = [UInt8](repeating: 0, count: 80)
        var derLength = der.count
        let signed = message.withUnsafeBufferPointer { input in
            EVP_DigestSign(context, &der, &derLength, input.baseAddress, input.count)
        }
        guard signed == 1 else { throw Self.signingError("EVP_DigestSign") }
        return try Self.rawSignature(fromDER: Array(der.prefix(derLength)))
    }

    /// A 32-byte key derived from this private key for `purpose` (HMAC-SHA256 under the key's DER encoding):
    /// every process given the same `.p8` derives the same key, and nobody without the file can. One-way:
    /// the derived key tells nothing about the private key. Used to seal the provider token the fleet shares,
    /// so that only a holder of the file — who could mint a token anyway — reads it.
    public func derivedKey(purpose: String) throws(APNsError) -> [UInt8] {
        var der: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PrivateKey(pkey, &der)
        guard length > 0, let der else { throw Self.signingError("i2d_PrivateKey") }
        defer {
            OPENSSL_cleanse(der, Int(length))
            copenssl_free(der)
        }
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var digestLength: UInt32 = 0
        let message = Array(purpose.utf8)
        guard HMAC(EVP_sha256(), der, length, message, message.count, &digest, &digestLength) != nil,
            digestLength == digest.count
        else { throw Self.signingError("HMAC") }
        return digest
    }

    /// Converts an ASN.1 DER ECDSA signature into the fixed-width r || s that JWS uses.
    static func rawSignature(fromDER der: [UInt8]) throws(APNsError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature = parsed else { throw signingError("d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        let ok = raw.withUnsafeMutableBufferPointer { out -> Bool in
            guard let r, let s, let base = out.baseAddress else { return false }
            return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
        }
        guard ok else { throw signingError("BN_bn2binpad") }
        return raw
    }

    private static func signingError(_ step: String) -> APNsError {
        let code = ERR_get_error()
        ERR_clear_error()
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        let cause = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return APNsError(code: .signingFailed, message: "ES256 signing failed at \(step)", cause: cause)
    }

    public var description: String { "APNsSigningKey(P-256, redacted)" }
}
