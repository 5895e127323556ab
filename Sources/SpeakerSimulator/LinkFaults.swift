import Support
import Transport

/// Delay and loss of a simulated network path, per datagram or frame: with `probability` a delay up to `maximum`
/// (uniform), otherwise up to `floor` (uniform) — a Wi-Fi link is mostly quick with bursts of retries —, and
/// `loss` of them dropped. Draws from a seeded generator, so a run reproduces.
public struct LinkJitter: Sendable, Hashable {
    /// The largest extra delay, ns.
    public var maximum: UInt64
    /// Share of datagrams that may see up to `maximum` (the others up to `floor`).
    public var probability: Double
    /// The largest extra delay of the others, ns.
    public var floor: UInt64
    /// Share of datagrams lost.
    public var loss: Double

    public init(maximum: UInt64 = 0, probability: Double = 1, floor: UInt64 = 0, loss: Double = 0) {
        self.maximum = maximum
        self.probability = max(0, min(1, probability))
        self.floor = floor
        self.loss = max(0, min(1, loss))
    }

    /// No jitter, no loss.
    public static let none = LinkJitter()

    public var isNone: Bool { maximum == 0 && floor == 0 && loss == 0 }

    /// The extra delay of one datagram, or nil when it is lost.
    public func draw(_ rng: inout SeededRandom) -> UInt64? {
        if loss > 0, Double.random(in: 0..<1, using: &rng) < loss { return nil }
        let big = probability >= 1 || Double.random(in: 0..<1, using: &rng) < probability
        let limit = big ? maximum : floor
        return limit == 0 ? 0 : UInt64.random(in: 0...limit, using: &rng)
    }
}
