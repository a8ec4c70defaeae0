/// Exponential backoff with full jitter: the n-th retry waits a uniformly random time in
/// `0 … min(cap, base · 2ⁿ)`. The exponent is clamped, so no attempt count can overflow.
public struct Backoff: Sendable, Hashable {
    public var baseSeconds: Double
    public var capSeconds: Double

    public init(baseSeconds: Double = 1, capSeconds: Double = 300) {
        self.baseSeconds = max(0, baseSeconds)
        self.capSeconds = max(0, capSeconds)
    }

    /// The upper bound of the wait before retry number `retry` (0 for the first retry).
    public func ceiling(retry: Int) -> Double {
        let exponent = Double(min(max(retry, 0), 1000))
        let raw = baseSeconds * Double.pow2(exponent)
        return raw.isFinite ? min(capSeconds, raw) : capSeconds
    }

    /// The wait before retry number `retry`; `unit` is a random number in 0…1.
    public func delay(retry: Int, unit: Double) -> Double {
        ceiling(retry: retry) * min(1, max(0, unit))
    }

    /// The wait before retry number `retry` with the system's random generator.
    public func delay(retry: Int) -> Double {
        delay(retry: retry, unit: Double.random(in: 0...1))
    }
}

extension Double {
    /// 2^x for whole x, without Foundation.
    fileprivate static func pow2(_ x: Double) -> Double {
        if x >= 1024 { return .infinity }
        var result = 1.0
        var remaining = Int(x)
        while remaining > 0 {
            result *= 2
            remaining -= 1
        }
        return result
    }
}
