/// Request ids: 16 lowercase hex digits from the system's random source, or a well-formed id a proxy sent.
public enum RequestID {
    /// A fresh random id.
    public static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Whether a client-supplied `X-Request-Id` is safe to adopt and log: 1–64 of `[A-Za-z0-9._-]`.
    public static func isAcceptable(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard !utf8.isEmpty, utf8.count <= 64 else { return false }
        return utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 46 || c == 95
        }
    }
}
