import Glibc
import Synchronization

/// Where a simulated speaker reads true time (nanoseconds, monotonic): the system's monotonic clock, or a
/// `ManualTimeSource` a test advances itself (so clock tests need no sleeps).
public struct TimeSource: Sendable {
    public let now: @Sendable () -> UInt64

    public init(_ now: @escaping @Sendable () -> UInt64) { self.now = now }

    /// CLOCK_MONOTONIC in nanoseconds.
    public static let monotonic = TimeSource {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

/// True time that moves only when told to.
public final class ManualTimeSource: Sendable {
    private let value: Mutex<UInt64>

    public init(start: UInt64 = 1_000_000_000) { value = Mutex(start) }

    public var now: UInt64 { value.withLock { $0 } }

    public func advance(by nanoseconds: UInt64) { value.withLock { $0 &+= nanoseconds } }

    /// This source as a `TimeSource`.
    public var source: TimeSource { TimeSource { [self] in now } }
}

/// A speaker's DAC clock: true time with an offset and a drift, `dac(t) = t + offset + t × ppm / 10⁶`.
public struct DACClock: Sendable {
    /// Nanoseconds the DAC clock is ahead of true time at true time 0.
    public var offset: Int64
    /// How fast it runs, parts per million (positive: fast).
    public var driftPPM: Double
    public var source: TimeSource

    public init(offset: Int64 = 0, driftPPM: Double = 0, source: TimeSource = .monotonic) {
        self.offset = offset
        self.driftPPM = driftPPM
        self.source = source
    }

    /// The DAC clock's reading at true time `t`.
    public func time(atTrueTime t: UInt64) -> UInt64 {
        let drift = Int64((Double(t) * driftPPM / 1_000_000).rounded())
        return UInt64(bitPattern: Int64(bitPattern: t) &+ offset &+ drift)
    }

    /// The DAC clock's reading now.
    public func now() -> UInt64 { time(atTrueTime: source.now()) }
}

extension DACClock {
    /// The true time at which the DAC clock reads `dac` (the inverse of `time(atTrueTime:)`, to the nanosecond).
    public func trueTime(atDACTime dac: UInt64) -> Double {
        (Double(Int64(bitPattern: dac &- UInt64(bitPattern: offset)))) / (1 + driftPPM / 1_000_000)
    }
}
