import Runtime

/// How a sealed personal field is written wherever the field's text would be (event data, read-model view
/// and snapshot, outbox bodies, stored idempotent answers): `enc:v1:<keyId>:<base64url(nonce|ciphertext|tag)>`.
///
/// A string, not an object, so that every shape that holds these fields keeps its type and the pure domain
/// carries them as the opaque strings they are to it. Every value the API accepts is sealed before it is
/// stored — a name that happens to start with `enc:` too — so a stored value with the prefix is always
/// ciphertext; only events written before personal data was sealed hold plain text (no prefix).
///
/// A value may carry a plain `fallback` after a third colon (`…:<base64url(fallback)>`): what a failed visit's
/// `vanDescription` — its sealed reason — reads once the reason cannot be opened (the technician's van,
/// which is not the customer's). `PersonalDataOpener` honours it for `vanDescription` only.
public struct SealedText: Sendable, Hashable {
    public static let prefix = "enc:v1:"
    static let prefixBytes = Array(prefix.utf8)

    public let keyId: String
    let sealed: [UInt8]
    /// Plain text read in place of the value when it cannot be opened (see the type's comment).
    public let fallback: String?

    /// The text form.
    public var text: String {
        let value = SealedText.prefix + keyId + ":" + Base64URL.encode(sealed)
        guard let fallback else { return value }
        return value + ":" + Base64URL.encode(Array(fallback.utf8))
    }

    init(keyId: String, sealed: [UInt8], fallback: String? = nil) {
        self.keyId = keyId
        self.sealed = sealed
        self.fallback = fallback
    }

    /// Parses the text form; nil for anything else (plain text).
    public init?(_ text: String) {
        guard text.utf8.starts(with: SealedText.prefixBytes) else { return nil }
        let rest = text.utf8.dropFirst(SealedText.prefixBytes.count)
        guard let colon = rest.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let keyId = String(decoding: rest[..<colon], as: UTF8.self)
        let value = rest[rest.index(after: colon)...]
        let end = value.firstIndex(of: UInt8(ascii: ":")) ?? value.endIndex
        guard !keyId.isEmpty, let bytes = Base64URL.decode(String(decoding: value[..<end], as: UTF8.self)) else { return nil }
        var fallback: String?
        if end != value.endIndex {
            guard let plain = Base64URL.decode(String(decoding: value[value.index(after: end)...], as: UTF8.self)),
                let text = String(validating: plain, as: UTF8.self)
            else { return nil }
            fallback = text
        }
        self.init(keyId: keyId, sealed: bytes, fallback: fallback)
    }

    /// The additional data every field sealed under `keyId` is bound to.
    static func additionalData(keyId: String) -> [UInt8] { Array("livevisits-personal-data:v1:\(keyId)".utf8) }
}
