/// Percent-decoding of request targets. MHD is told not to unescape (so the raw path survives);
/// this is where `%XX` becomes bytes and the bytes must be UTF-8.
enum PercentDecoding {
    /// Decodes `%XX` escapes; nil for a broken escape or bytes that are not UTF-8.
    static func decode(_ text: Substring) -> String? {
        let utf8 = text.utf8
        guard utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                guard first != utf8.endIndex else { return nil }
                let second = utf8.index(after: first)
                guard second != utf8.endIndex, let high = hexValue(utf8[first]), let low = hexValue(utf8[second]) else {
                    return nil
                }
                bytes.append(high << 4 | low)
                index = utf8.index(after: second)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// `/a/b%20c` → `["a", "b c"]`; `/` → `[]`; nil when a segment does not decode or the path is not absolute.
    static func pathSegments(_ rawPath: String) -> [String]? {
        guard rawPath.hasPrefix("/") else { return nil }
        let rest = rawPath.dropFirst()
        if rest.isEmpty { return [] }
        var segments: [String] = []
        for piece in rest.split(separator: "/", omittingEmptySubsequences: false) {
            guard let decoded = decode(piece) else { return nil }
            segments.append(decoded)
        }
        return segments
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
