/// The speaker's answer to `clockSync(t1)`: the controller's send time echoed, and the speaker's receive (t2) and send
/// (t3) times on its own clock. All times are nanoseconds on a monotonic clock.
public struct ClockSyncReply: Sendable, Hashable {
    /// The controller's send time, echoed.
    public var t1: UInt64
    /// When the request arrived, speaker clock.
    public var t2: UInt64
    /// When the reply left, speaker clock (t3 ≥ t2).
    public var t3: UInt64

    /// Throws `.valueOutOfRange` when t3 < t2.
    public init(t1: UInt64, t2: UInt64, t3: UInt64) throws(SpeakerError) {
        guard t3 >= t2 else { throw SpeakerError(.valueOutOfRange, "clock sync reply sent (t3 \(t3)) before it was received (t2 \(t2))") }
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
    }
}

/// One clock-sync exchange completed by the controller's receive time t4 (controller clock).
///
/// As NTP: offset θ = ((t2 − t1) + (t3 − t4)) / 2 (speaker clock minus controller clock, exact when the two network
/// legs take equally long) and round-trip delay δ = (t4 − t1) − (t3 − t2); the error of θ is at most δ / 2.
public struct ClockSample: Sendable, Hashable {
    public var t1: UInt64
    public var t2: UInt64
    public var t3: UInt64
    public var t4: UInt64

    public init(_ reply: ClockSyncReply, receivedAt t4: UInt64) {
        t1 = reply.t1
        t2 = reply.t2
        t3 = reply.t3
        self.t4 = t4
    }

    /// θ in nanoseconds, rounded toward zero (wrapping arithmetic: never traps).
    public var offset: Int64 {
        let a = Int64(bitPattern: t2 &- t1)
        let b = Int64(bitPattern: t3 &- t4)
        return a / 2 &+ b / 2 &+ (a % 2 &+ b % 2) / 2
    }

    /// δ in nanoseconds (negative only if a clock went backwards).
    public var delay: Int64 { Int64(bitPattern: (t4 &- t1) &- (t3 &- t2)) }

    /// The controller time the offset applies to: the middle of t1 and t4.
    public var midpoint: UInt64 { t1 &+ (t4 &- t1) / 2 }
}

/// The controller's estimate of one speaker's clock, sent to it with `setClockMap` so that it can turn presentation
/// times on the controller's timeline into times on its own (DAC) clock:
///
/// `speakerTime(c) = speakerReference + d + trunc(d × rate / 10⁹)`, `d = c − controllerReference` (signed, ns)
///
/// where `rate` is the speaker clock's drift relative to the controller's in parts per billion (positive: the
/// speaker's clock runs fast). Both sides compute it with `speakerTime(forControllerTime:)`, so they agree to the
/// nanosecond.
public struct ClockMap: Sendable, Hashable {
    /// The largest |rate|: 10,000 ppm, well above what crystals drift (AirPlay 2 copes with 2,800 ppm).
    public static let maxRate: Int32 = 10_000_000

    public let controllerReference: UInt64
    public let speakerReference: UInt64
    /// Parts per billion.
    public let rate: Int32

    /// Throws `.valueOutOfRange` when |rate| > 10,000,000 ppb.
    public init(controllerReference: UInt64, speakerReference: UInt64, rate: Int32) throws(SpeakerError) {
        guard rate >= -Self.maxRate, rate <= Self.maxRate else {
            throw SpeakerError(.valueOutOfRange, "clock rate \(rate) ppb is outside ±\(Self.maxRate)")
        }
        self.controllerReference = controllerReference
        self.speakerReference = speakerReference
        self.rate = rate
    }

    /// The speaker-clock time of controller time `c` (wrapping arithmetic: never traps).
    public func speakerTime(forControllerTime c: UInt64) -> UInt64 {
        let d = Int64(bitPattern: c &- controllerReference)
        let product = d.multipliedFullWidth(by: Int64(rate))
        // |d × rate / 10⁹| ≤ |d| / 100, so the quotient always fits.
        let adjustment = Int64(1_000_000_000).dividingFullWidth(product).quotient
        return speakerReference &+ UInt64(bitPattern: d &+ adjustment)
    }

    /// Fits a map to `samples` by least squares of offset against controller time, after dropping the samples whose
    /// delay is above the median (they carry the largest errors). The reference is the newest sample's midpoint.
    /// Nil without samples; with one kept sample the rate is 0. The rate is clamped to ±`maxRate`.
    public static func fit(_ samples: [ClockSample]) -> ClockMap? {
        guard !samples.isEmpty else { return nil }
        let delays = samples.map(\.delay).sorted()
        let median = delays[(delays.count - 1) / 2]
        let kept = samples.filter { $0.delay <= median }
        return fit(kept, weights: kept.map { _ in 1 })
    }

    /// Fits a map to `samples` by weighted least squares of offset against controller time (`weights[i]` for
    /// `samples[i]`, positive). The reference is the newest sample's midpoint. Nil without samples; with one sample
    /// (or all at one time) the rate is 0. The rate is clamped to ±`maxRate`. `minimumSpread`: when the points' weighted spread in time (their standard deviation,
    /// ns) is below it, the slope is not trusted and `fallbackRate` is used instead.
    public static func fit(_ samples: [ClockSample], weights: [Double], minimumSpread: Double = 0, fallbackRate: Int32 = 0) -> ClockMap? {
        guard !samples.isEmpty, weights.count == samples.count else { return nil }
        let reference = samples.map(\.midpoint).max()!
        let points = zip(samples, weights).map { (x: Double(Int64(bitPattern: $0.midpoint &- reference)), y: Double($0.offset), w: $1) }
        let total = points.map(\.w).reduce(0, +)
        guard total > 0 else { return nil }
        let meanX = points.map { $0.w * $0.x }.reduce(0, +) / total
        let meanY = points.map { $0.w * $0.y }.reduce(0, +) / total
        let sxx = points.map { $0.w * ($0.x - meanX) * ($0.x - meanX) }.reduce(0, +)
        let sxy = points.map { $0.w * ($0.x - meanX) * ($0.y - meanY) }.reduce(0, +)
        let trusted = sxx > 0 && (sxx / total).squareRoot() >= minimumSpread
        let raw = trusted ? (sxy / sxx * 1e9).rounded() : Double(fallbackRate)
        let ppb = raw.isFinite ? max(-Double(maxRate), min(Double(maxRate), raw)) : 0
        let offsetAtReference = meanY - ppb / 1e9 * meanX
        let offset = Int64(exactly: offsetAtReference.rounded()) ?? 0
        return try? ClockMap(controllerReference: reference, speakerReference: reference &+ UInt64(bitPattern: offset),
                             rate: Int32(ppb))
    }
}
