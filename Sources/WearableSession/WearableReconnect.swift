/// How a session with reconnecting on (`WearableDeviceSession.Options.reconnect`) comes back after a lost link:
/// the first attempt at once, then after `firstDelay`, doubling up to `maxDelay` between attempts (100 ms, 200 ms,
/// 400 ms, 800 ms, then every second: a device back is found within about a second plus the time to open it), until
/// it opens or `giveUpAfter` has passed since the link was lost (nil: never; the last attempt is made at the limit).
public struct ReconnectPolicy: Sendable, Hashable {
    public var firstDelay: Duration
    public var maxDelay: Duration
    /// Time since the loss after which a failed attempt ends the session (`didClose(disconnected)`); nil: never.
    public var giveUpAfter: Duration?

    public init(firstDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(1), giveUpAfter: Duration? = nil) {
        self.firstDelay = firstDelay
        self.maxDelay = max(firstDelay, maxDelay)
        self.giveUpAfter = giveUpAfter
    }

    /// The wait after `failed` failed attempts (1: the first).
    public func delay(afterFailedAttempts failed: Int) -> Duration {
        var d = firstDelay
        for _ in 1..<max(1, failed) where d < maxDelay { d = d * 2 }
        return min(d, maxDelay)
    }
}

/// The reconnect logic as a value: each case carries only what holds in it, one mutating function per event, each
/// answering what the I/O shell (`WearableDeviceSession`) does next. Times are on the session's clock (`Duration`
/// since its origin), so a test drives it on a `ManualClock` without sleeping.
public struct ReconnectMachine: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        /// The link is up (or the session never lost one).
        case connected
        /// An attempt to open the device is under way: the `attempt`th since the link was lost at `lostAt`.
        case connecting(lostAt: Duration, attempt: Int)
        /// Waiting until `retryAt` after `failed` failed attempts.
        case waiting(lostAt: Duration, failed: Int, retryAt: Duration)
        /// Reconnecting ended for good: given up (the error of the last attempt) or stopped (`close()`).
        case ended(WearableSessionError?)
    }

    /// What the shell does next.
    public enum Action: Sendable, Hashable {
        /// Open the device now and write the configuration again; then `attemptSucceeded` or `attemptFailed`.
        case connect(attempt: Int)
        /// Sleep until this time on the session's clock, then `timerFired`.
        case retry(at: Duration)
        /// Back: the link was down for `gap` (loss to the configuration written again) over `attempts` attempts.
        case reconnected(gap: Duration, attempts: Int)
        /// Give up: close the session with this error.
        case giveUp(WearableSessionError)
        /// Nothing (an event that does not apply in the current state: a late timer after `stop`).
        case none
    }

    public let policy: ReconnectPolicy
    public private(set) var state: State = .connected
    /// Completed reconnects.
    public private(set) var reconnects = 0
    /// The links lost, the time they were down in all (completed reconnects).
    public private(set) var totalGap: Duration = .zero

    public init(policy: ReconnectPolicy) { self.policy = policy }

    /// The link was lost at `now`: the first attempt at once.
    public mutating func linkLost(_ error: WearableSessionError, at now: Duration) -> Action {
        guard case .connected = state else { return .none }
        state = .connecting(lostAt: now, attempt: 1)
        return .connect(attempt: 1)
    }

    /// An attempt failed at `now`. `permanent`: one that no retry will change (the device refused the configuration
    /// that it took before, or it is not a wearable): give up at once.
    public mutating func attemptFailed(_ error: WearableSessionError, at now: Duration, permanent: Bool = false) -> Action {
        guard case let .connecting(lostAt, attempt) = state else { return .none }
        var retryAt = now + policy.delay(afterFailedAttempts: attempt)
        if let limit = policy.giveUpAfter {
            // The last attempt is made at the limit itself; one failing at or after it gives up.
            if now - lostAt >= limit { return giveUp(error) }
            retryAt = min(retryAt, lostAt + limit)
        }
        if permanent { return giveUp(error) }
        state = .waiting(lostAt: lostAt, failed: attempt, retryAt: retryAt)
        return .retry(at: retryAt)
    }

    private mutating func giveUp(_ error: WearableSessionError) -> Action {
        state = .ended(error)
        return .giveUp(error)
    }

    /// The wait ended at `now`: the next attempt (a timer that fires early waits on).
    public mutating func timerFired(at now: Duration) -> Action {
        guard case let .waiting(lostAt, failed, retryAt) = state else { return .none }
        guard now >= retryAt else { return .retry(at: retryAt) }
        state = .connecting(lostAt: lostAt, attempt: failed + 1)
        return .connect(attempt: failed + 1)
    }

    /// The device is open again with its configuration written at `now`.
    public mutating func attemptSucceeded(at now: Duration) -> Action {
        guard case let .connecting(lostAt, attempt) = state else { return .none }
        state = .connected
        reconnects += 1
        totalGap += now - lostAt
        return .reconnected(gap: now - lostAt, attempts: attempt)
    }

    /// `close()`: no more attempts, whatever the state.
    public mutating func stop() {
        state = .ended(nil)
    }

    /// Whether the machine is between a loss and its reconnect (attempting or waiting).
    public var isReconnecting: Bool {
        switch state {
        case .connecting, .waiting: return true
        case .connected, .ended: return false
        }
    }
}
