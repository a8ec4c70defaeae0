import COpenSSL

/// AES-256-GCM through OpenSSL's EVP interface: `seal` gives `nonce (12) | ciphertext | tag (16)`, `open`
/// checks the tag (and the additional data) before it returns a byte. Stateless; every call makes its own
/// `EVP_CIPHER_CTX`, so it is safe from any thread.
enum AESGCM {
    static let keyBytes = 32
    static let nonceBytes = 12
    static let tagBytes = 16

    struct Failure: Error, Sendable {
        let message: String
    }

    /// `count` random bytes from OpenSSL's generator.
    static func random(_ count: Int) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw Failure(message: "RAND_bytes failed") }
        return bytes
    }

    static func seal(_ plaintext: [UInt8], key: [UInt8], additionalData: [UInt8]) throws(Failure) -> [UInt8] {
        precondition(key.count == keyBytes)
        let nonce = try random(nonceBytes)
        guard let context = EVP_CIPHER_CTX_new() else { throw Failure(message: "EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = nonce
        out.append(contentsOf: [UInt8](repeating: 0, count: plaintext.count + tagBytes))
        var length: Int32 = 0
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            let body = buffer.baseAddress! + nonceBytes
            guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else { return false }
            if !additionalData.isEmpty {
                guard EVP_EncryptUpdate(context, nil, &length, additionalData, Int32(additionalData.count)) == 1 else {
                    return false
                }
            }
            if !plaintext.isEmpty {
                guard EVP_EncryptUpdate(context, body, &length, plaintext, Int32(plaintext.count)) == 1 else { return false }
            }
            guard EVP_EncryptFinal_ex(context, body + plaintext.count, &length) == 1 else { return false }
            return EVP_CIPHER_CTX_ctrl(
                context, EVP_CTRL_GCM_GET_TAG, Int32(tagBytes), UnsafeMutableRawPointer(body + plaintext.count)) == 1
        }
        guard ok else { throw Failure(message: "AES-256-GCM encryption failed") }
        return out
    }

    /// The plaintext, or nil when the tag does not match (a changed byte, another key, other additional data).
    static func open(_ sealed: [UInt8], key: [UInt8], additionalData: [UInt8]) -> [UInt8]? {
        guard key.count == keyBytes, sealed.count >= nonceBytes + tagBytes,
            let context = EVP_CIPHER_CTX_new()
        else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let bodyCount = sealed.count - nonceBytes - tagBytes
        var out = [UInt8](repeating: 0, count: bodyCount)
        var tag = Array(sealed[(sealed.count - tagBytes)...])
        var length: Int32 = 0
        let ok = sealed.withUnsafeBufferPointer { input -> Bool in
            let nonce = input.baseAddress!
            guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else { return false }
            if !additionalData.isEmpty {
                guard EVP_DecryptUpdate(context, nil, &length, additionalData, Int32(additionalData.count)) == 1 else {
                    return false
                }
            }
            if bodyCount > 0 {
                guard EVP_DecryptUpdate(context, &out, &length, nonce + nonceBytes, Int32(bodyCount)) == 1 else { return false }
            }
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagBytes), &tag) == 1 else { return false }
            return out.withUnsafeMutableBufferPointer { o in
                EVP_DecryptFinal_ex(context, o.baseAddress.map { $0 + bodyCount }, &length) == 1
            }
        }
        return ok ? out : nil
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in _ = SHA256(input.baseAddress, input.count, &digest) }
        return digest
    }

    /// HMAC-SHA256 of `message` under `key` (32 bytes).
    static func hmacSHA256(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var length: UInt32 = 0
        _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &digest, &length)
        return digest
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
