import Foundation

/// Wall-clock time as seen by the services. Anything that waits on time takes one,
/// so that tests drive time instead of sleeping.
public protocol WallClock: Sendable {
    /// Seconds since 1970.
    func now() -> Double
    /// Sleeps for `seconds` of this clock's time (a manual clock returns when advanced past it).
    func sleep(seconds: Double) async throws
}

extension WallClock {
    /// Whole seconds since 1970.
    public func epochSeconds() -> Int64 { Int64(now().rounded(.down)) }
}

/// The real clock.
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
    public func sleep(seconds: Double) async throws {
        guard seconds > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400 * 365) * 1_000_000_000))
    }
}

extension Duration {
    /// This duration in seconds, as a `Double` (rates, latencies, intervals).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
