/// The session's view of a `Clock`: time as the `Duration` since the session started, and sleeping until such a
/// time. Every timer and wait of `RequestSession` goes through it, so tests can run a session on a clock they
/// advance themselves.
struct SessionClock: Sendable {
    /// Time since the session's origin.
    let now: @Sendable () -> Duration
    /// Sleeps until `now()` reaches the deadline; throws `CancellationError` when the task is cancelled.
    let sleep: @Sendable (_ until: Duration) async throws -> Void

    init<C: Clock<Duration>>(_ clock: C) {
        let origin = clock.now
        now = { origin.duration(to: clock.now) }
        sleep = { deadline in try await clock.sleep(until: origin.advanced(by: deadline), tolerance: nil) }
    }
}
