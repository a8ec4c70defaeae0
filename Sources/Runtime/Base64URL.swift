/// base64url without padding (RFC 4648 §5, as JWS compact serialization uses, RFC 7515 §2): the
/// provider tokens the APNs client signs and the simulator verifies, and the API's list cursors.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The unpadded base64url text of `bytes`.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            if second != nil { output.append(alphabet[Int(group >> 6 & 0x3F)]) }
            if third != nil { output.append(alphabet[Int(group & 0x3F)]) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of unpadded base64url `text`; `nil` for any other character (padding included), an
    /// impossible length, or unused trailing bits that are not zero (so each byte string has one text).
    /// Inlinable, so that it is specialized where it is called: unspecialized, a String's bytes would come
    /// one by one through the generic `StringProtocol`, on the path that opens every sealed field.
    @inlinable
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = text.utf8
        guard utf8.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(utf8.count * 3 / 4)
        var group: UInt32 = 0
        var filled = 0
        for byte in utf8 {
            guard let value = sextet(byte) else { return nil }
            group = group << 6 | UInt32(value)
            filled += 1
            if filled == 4 {
                output.append(UInt8(truncatingIfNeeded: group >> 16))
                output.append(UInt8(truncatingIfNeeded: group >> 8))
                output.append(UInt8(truncatingIfNeeded: group))
                group = 0
                filled = 0
            }
        }
        switch filled {
        case 2:
            guard group & 0xF == 0 else { return nil }
            output.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:
            guard group & 0x3 == 0 else { return nil }
            output.append(UInt8(truncatingIfNeeded: group >> 10))
            output.append(UInt8(truncatingIfNeeded: group >> 2))
        default: break
        }
        return output
    }

    @usableFromInline
    static func sextet(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
