/// SplitMix64 (Steele, Lea, Flood 2014): a tiny seedable generator, so a seeded sequence is the same
/// on every run (the simulator's random fault fraction, the fuzz tests), and its finalizer `mix`, a
/// bijection of `UInt64` that makes a counter look random (request ids).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next value of the sequence.
    public mutating func next() -> UInt64 {
        state &+= SplitMix64.increment
        return SplitMix64.mix(state)
    }

    /// The golden-ratio step the state advances by.
    public static let increment: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The finalizer: a bijection, so distinct inputs give distinct outputs.
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
