import Glibc
import SpeakerPlayback
import Synchronization
import Transport

/// Where a simulated speaker reads true time (nanoseconds, monotonic) and waits on it (its render pump, and so its
/// audio timeout): the system's monotonic clock, a `Clock` a test advances itself (`TimeSource(clock:)` on
/// `ManualClock`: the speaker renders and gives up on virtual time), or a `ManualTimeSource` (clock-sync tests that
/// read the time only).
public struct TimeSource: Sendable {
    public let now: @Sendable () -> UInt64
    /// Waits `nanoseconds` of this time; throws `CancellationError` when the task is cancelled.
    public let sleep: @Sendable (_ nanoseconds: UInt64) async throws -> Void
    /// `now` is CLOCK_MONOTONIC: times the kernel gives (a datagram's receive time, `UDPDatagram.receivedAt`) are on
    /// it too.
    public let isMonotonic: Bool

    /// Time read by `now`; waits are real time (`Task.sleep`) unless `sleep` says otherwise.
    public init(_ now: @escaping @Sendable () -> UInt64,
                sleep: @escaping @Sendable (_ nanoseconds: UInt64) async throws -> Void = { try await Task.sleep(for: .nanoseconds($0)) }) {
        self.now = now
        self.sleep = sleep
        isMonotonic = false
    }

    private init(monotonic now: @escaping @Sendable () -> UInt64) {
        self.now = now
        sleep = { try await Task.sleep(for: .nanoseconds($0)) }
        isMonotonic = true
    }

    /// CLOCK_MONOTONIC in nanoseconds.
    public static let monotonic = TimeSource(monotonic: monotonicNanoseconds)

    /// The time of `clock` (a test's `ManualClock`): `start` plus its time since this source was made; waits sleep on
    /// it.
    public init<C: Clock<Duration>>(clock: C, start: UInt64 = 1_000_000_000) {
        let origin = clock.now
        now = { start &+ PlaybackMachine.ns(origin.duration(to: clock.now)) }
        sleep = { nanoseconds in
            try await clock.sleep(until: clock.now.advanced(by: .nanoseconds(Int64(clamping: nanoseconds))), tolerance: nil)
        }
        isMonotonic = false
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
