import Transport

/// A `Clock` seen as time since an origin: time as the `Duration` since it was made, sleeping until such a time, and
/// running an action at such a time. Every timer and wait of `RequestSession` (and of the firmware updater) goes
/// through one, so tests can run them on a clock they advance themselves (`ManualClock`).
///
/// On `ContinuousClock` (what the tools use) sleeps and timers run on the I/O reactor's precise timers (`Timers`):
/// a request's timeout is a heap entry, not a task and a dispatch timer. On any other clock they are tasks sleeping
/// on that clock.
public struct SessionClock: Sendable {
    /// Time since the origin.
    public let now: @Sendable () -> Duration
    /// Sleeps until `now()` reaches the deadline; throws `CancellationError` when the task is cancelled.
    public let sleep: @Sendable (_ until: Duration) async throws -> Void
    /// Runs the action once `now()` reaches the deadline, unless the returned timer is cancelled first. The action
    /// must be short and must not block (start a task for anything more).
    public let schedule: @Sendable (_ at: Duration, _ action: @escaping @Sendable () -> Void) -> SessionTimer

    public init<C: Clock<Duration>>(_ clock: C) {
        if let continuous = clock as? ContinuousClock {
            let origin = continuous.now
            now = { origin.duration(to: .now) }
            sleep = { deadline in try await Timers.sleep(until: origin.advanced(by: deadline)) }
            schedule = { deadline, action in .reactor(Timers.schedule(at: origin.advanced(by: deadline), action)) }
        } else {
            let origin = clock.now
            now = { origin.duration(to: clock.now) }
            sleep = { deadline in try await clock.sleep(until: origin.advanced(by: deadline), tolerance: nil) }
            schedule = { deadline, action in
                .task(Task {
                    do { try await clock.sleep(until: origin.advanced(by: deadline), tolerance: nil) } catch { return }
                    guard !Task.isCancelled else { return }
                    action()
                })
            }
        }
    }
}

/// A timer started by `SessionClock.schedule`.
public enum SessionTimer: Sendable {
    case reactor(ReactorTimer)
    case task(Task<Void, Never>)

    /// Stops the timer (its action does not run if it has not started).
    public func cancel() {
        switch self {
        case let .reactor(timer): Timers.cancel(timer)
        case let .task(task): task.cancel()
        }
    }
}
