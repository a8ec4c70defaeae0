import Runtime
import Synchronization

/// Request ids: 16 lowercase hex digits, or a well-formed id a proxy sent.
public enum RequestID {
    /// A fresh id: a per-process counter, started at a random point and scrambled by SplitMix64's
    /// finalizer (a bijection, so ids never repeat within a process, and look random across processes)
    /// — without a trip to the kernel's random source per request.
    public static func generate() -> String {
        let z = SplitMix64.mix(seed &+ counter.wrappingAdd(1, ordering: .relaxed).newValue &* SplitMix64.increment)
        let hex = String(z, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    private static let seed = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)

    /// Whether a client-supplied `X-Request-Id` is safe to adopt and log: 1–64 of `[A-Za-z0-9._-]`.
    public static func isAcceptable(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard !utf8.isEmpty, utf8.count <= 64 else { return false }
        return utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 46 || c == 95
        }
    }
}
