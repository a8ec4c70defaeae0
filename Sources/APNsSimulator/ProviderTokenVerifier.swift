import COpenSSL
import Foundation
import JSON
import Runtime

/// Checks `authorization: bearer <JWT>` the way APNs does: ES256 over `header.claims` with a known
/// key (`kid` and `iss` must match a configured key), and an `iat` neither older than the token
/// lifetime nor in the future.
///
/// Keys are loaded once at init and only read afterwards; OpenSSL allows concurrent verification
/// with one `EVP_PKEY`, each call using its own `EVP_MD_CTX`.
final class ProviderTokenVerifier: @unchecked Sendable {  // keys: immutable after init; cache: `cache` lock
    enum Outcome: Equatable {
        case valid(ProviderTokenSummary)
        case missing
        case invalid(ProviderTokenSummary?)
        case expired(ProviderTokenSummary)
    }

    private struct LoadedKey {
        let teamID: String?
        let keyID: String?
        let key: OpaquePointer  // EVP_PKEY, freed in deinit
    }

    private struct Parsed {
        let summary: ProviderTokenSummary
        let signatureValid: Bool
    }

    private let keys: [LoadedKey]
    private let lifetime: Double
    private let futureTolerance: Double
    /// Parsed and signature-checked tokens, so a reused JWT costs one dictionary lookup.
    private let cache = Lock<[String: Parsed]>([:])
    private static let cacheLimit = 4096

    init(keys: [ProviderKey], lifetime: Double, futureTolerance: Double) throws(SimulatorError) {
        var loaded: [LoadedKey] = []
        for key in keys {
            loaded.append(
                LoadedKey(teamID: key.teamID, keyID: key.keyID, key: try ProviderTokenVerifier.loadKey(pem: key.publicKeyPEM)))
        }
        self.keys = loaded
        self.lifetime = lifetime
        self.futureTolerance = futureTolerance
    }

    deinit {
        for key in keys { EVP_PKEY_free(key.key) }
    }

    /// True when no key is configured: signatures are then not checked (the token is still parsed
    /// and its age checked).
    var acceptsAnySignature: Bool { keys.isEmpty }

    /// Checks the value of an `authorization` header (nil when absent) at time `now`.
    func verify(authorization: String?, now: Double) -> Outcome {
        guard let authorization, !authorization.isEmpty else { return .missing }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return .invalid(nil) }
        // HTTP/2 field values carry no outer whitespace (nghttp2 enforces RFC 9113), only inner runs.
        let jwt = String(parts[1].drop(while: { $0 == " " || $0 == "\t" }))
        let parsed: Parsed
        if let hit = cache.withLock({ $0[jwt] }) {
            parsed = hit
        } else {
            guard let fresh = parse(jwt) else { return .invalid(nil) }
            parsed = fresh
            cache.withLock { c in
                if c.count >= ProviderTokenVerifier.cacheLimit { c.removeAll(keepingCapacity: true) }
                c[jwt] = fresh
            }
        }
        let summary = parsed.summary
        guard parsed.signatureValid, let iat = summary.issuedAt else { return .invalid(summary) }
        if Double(iat) > now + futureTolerance { return .invalid(summary) }
        if now - Double(iat) > lifetime { return .expired(summary) }
        return .valid(summary)
    }

    private func parse(_ jwt: String) -> Parsed? {
        let segments = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3,
            let headerBytes = Base64URL.decode(segments[0]),
            let claimBytes = Base64URL.decode(segments[1]),
            let signature = Base64URL.decode(segments[2]),
            let header = try? JSONValue.parse(headerBytes), header.isObject,
            let claims = try? JSONValue.parse(claimBytes), claims.isObject
        else { return nil }
        let summary = ProviderTokenSummary(
            algorithm: header["alg"]?.stringValue,
            keyID: header["kid"]?.stringValue,
            issuer: claims["iss"]?.stringValue,
            issuedAt: claims["iat"]?.integerValue
        )
        guard summary.algorithm == "ES256", summary.keyID != nil, summary.issuer != nil else {
            return Parsed(summary: summary, signatureValid: false)
        }
        if keys.isEmpty { return Parsed(summary: summary, signatureValid: true) }
        let candidates = keys.filter {
            ($0.keyID == nil || $0.keyID == summary.keyID) && ($0.teamID == nil || $0.teamID == summary.issuer)
        }
        let signingInput = Array(jwt.utf8.prefix(segments[0].utf8.count + 1 + segments[1].utf8.count))
        let valid =
            signature.count == 64
            && candidates.contains {
                ProviderTokenVerifier.verifyES256(rawSignature: signature, input: signingInput, key: $0.key)
            }
        return Parsed(summary: summary, signatureValid: valid)
    }

    /// Verifies a JWS ES256 signature (64 bytes r||s) by re-encoding it as DER for OpenSSL.
    private static func verifyES256(rawSignature: [UInt8], input: [UInt8], key: OpaquePointer) -> Bool {
        guard let sig = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(sig) }
        let r = rawSignature.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = rawSignature.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return false
        }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return false
        }
        let derLength = i2d_ECDSA_SIG(sig, nil)
        guard derLength > 0 else { return false }
        var der = [UInt8](repeating: 0, count: Int(derLength))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_ECDSA_SIG(sig, &cursor)
        }
        guard written == derLength, let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            return false
        }
        let ok = EVP_DigestVerify(ctx, der, der.count, input, input.count) == 1
        ERR_clear_error()
        return ok
    }

    /// Reads a P-256 public key from PEM; a PEM private key (such as an APNs `.p8`) is accepted
    /// too and its public half used.
    static func loadKey(pem: String) throws(SimulatorError) -> OpaquePointer {
        let bytes = Array(pem.utf8)
        func read(_ body: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
            bytes.withUnsafeBytes { raw -> OpaquePointer? in
                guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
                defer { BIO_free(bio) }
                return body(bio)
            }
        }
        let key = read { PEM_read_bio_PUBKEY($0, nil, nil, nil) } ?? read { PEM_read_bio_PrivateKey($0, nil, nil, nil) }
        ERR_clear_error()
        guard let key else {
            throw SimulatorError(.publicKey, "the provider key is not a PEM public key or private key")
        }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        let isEC = EVP_PKEY_get_base_id(key) == EVP_PKEY_EC
        let hasGroup = isEC && EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1
        let group = hasGroup ? String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        guard group == "prime256v1" || group == "P-256" else {
            EVP_PKEY_free(key)
            ERR_clear_error()
            throw SimulatorError(.publicKey, "the provider key is not an EC P-256 key (ES256 needs P-256)")
        }
        return key
    }
}
