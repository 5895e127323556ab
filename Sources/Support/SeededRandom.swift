/// A small, fast, seedable pseudo-random generator (xoshiro256**, seeded through SplitMix64).
///
/// Contract: the same seed always produces the same sequence on every platform and in every build, so fault
/// injection driven by it is reproducible. Not cryptographically secure.
public struct SeededRandom: RandomNumberGenerator, Sendable, Hashable {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    /// Creates a generator whose whole state is derived from `seed` with SplitMix64 (any seed, including 0, is fine).
    public init(seed: UInt64) {
        var mix = seed
        s0 = Self.splitMix64(&mix)
        s1 = Self.splitMix64(&mix)
        s2 = Self.splitMix64(&mix)
        s3 = Self.splitMix64(&mix)
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        let result = rotl(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        return result
    }

    /// A uniformly distributed double in [0, 1) with 53 random bits.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// One SplitMix64 step: advances `state` and returns the mixed output.
    public static func splitMix64(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    @inline(__always)
    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 {
        (x << k) | (x >> (64 - k))
    }
}
