/// A `Clock` seen as time since an origin: time as the `Duration` since it was made, and sleeping until such a
/// time. Every timer and wait of `RequestSession` (and of the firmware updater) goes through one, so tests can run
/// them on a clock they advance themselves (`ManualClock`).
public struct SessionClock: Sendable {
    /// Time since the origin.
    public let now: @Sendable () -> Duration
    /// Sleeps until `now()` reaches the deadline; throws `CancellationError` when the task is cancelled.
    public let sleep: @Sendable (_ until: Duration) async throws -> Void

    public init<C: Clock<Duration>>(_ clock: C) {
        let origin = clock.now
        now = { origin.duration(to: clock.now) }
        sleep = { deadline in try await clock.sleep(until: origin.advanced(by: deadline), tolerance: nil) }
    }
}
