/// The continuous clock run `scale` times faster (a simulated wearable's clock for `sim wearable --time-scale`:
/// a 30-minute recording's samples in a minute). Sleeps last the real time `(deadline - now) / scale`.
public struct ScaledClock: Clock {
    public typealias Instant = ContinuousClock.Instant
    public let scale: Double
    private let origin: ContinuousClock.Instant

    public init(scale: Double) {
        precondition(scale > 0 && scale.isFinite, "a clock's scale is positive")
        self.scale = scale
        origin = .now
    }

    public var now: Instant { origin + (ContinuousClock.now - origin) * scale }
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await ContinuousClock().sleep(until: origin + (deadline - origin) / scale, tolerance: nil)
    }
}
