import Session
import Transport
import SpeakerPlayback

/// The clock of `SpeakerPlayer`'s shell: its timeline (nanoseconds: presentation times, clock-sync timestamps, the
/// elapsed time) and every wait it makes (the streaming loop's wakes, the clock-sync intervals, the sync timeout, the
/// resume grace, the pauses between reconnection attempts), both from the one clock the player is given.
///
/// On `ContinuousClock` (the tools) the timeline is CLOCK_MONOTONIC (`monotonicNanoseconds`, read as before: no
/// `Duration` arithmetic per packet) and the waits run on the I/O reactor's precise timers (`SessionClock`). On any
/// other clock (tests' `ManualClock`) the timeline is `origin` plus the clock's time since the player was made and the
/// waits sleep on that clock, so virtual time drives the whole stream.
struct PlayerClock: Sendable {
    /// Where the timeline starts on a clock other than `ContinuousClock` (1 s, as `ManualTimeSource`: no arithmetic
    /// near zero).
    static let origin: UInt64 = 1_000_000_000

    /// The timeline now, ns.
    let now: @Sendable () -> UInt64
    /// The timeline is CLOCK_MONOTONIC (`ContinuousClock`): the kernel's receive times are on it
    /// (`UDPDatagram.receivedAt`, clock sync's t4).
    let isMonotonic: Bool
    private let clock: SessionClock

    init<C: Clock<Duration>>(_ clock: C) {
        let session = SessionClock(clock)
        self.clock = session
        if clock is ContinuousClock {
            now = monotonicNanoseconds
            isMonotonic = true
        } else {
            now = { Self.origin &+ PlaybackMachine.ns(session.now()) }
            isMonotonic = false
        }
    }

    /// Sleeps `duration`; throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws {
        try await clock.sleep(clock.now() + duration)
    }

    /// Runs `action` (short, never blocking: it starts a task) after `duration`, unless the timer is cancelled first.
    func schedule(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> SessionTimer {
        clock.schedule(clock.now() + duration, action)
    }
}
