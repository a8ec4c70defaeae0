import COpenSSL

/// The `LiveVisits-Signature` header: `t=<epoch seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. A
/// receiver recomputes `v1` over the timestamp, a dot and the raw body it got, compares in constant time,
/// and refuses a `t` far from its own clock (a replay).
public enum WebhookSignature {
    public static let headerName = "LiveVisits-Signature"

    /// The header's value for `body` signed at `timestamp`.
    public static func header(secret: String, timestamp: Int64, body: [UInt8]) -> String {
        "t=\(timestamp),v1=\(hex(hmacSHA256(key: Array(secret.utf8), message: Array("\(timestamp).".utf8) + body)))"
    }

    /// HMAC-SHA256 of `message` under `key`.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var length: UInt32 = 0
        _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &digest, &length)
        return digest
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
