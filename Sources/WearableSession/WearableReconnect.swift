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
