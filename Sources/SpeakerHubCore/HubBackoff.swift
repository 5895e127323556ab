/// How the hub waits between attempts to reach a speaker it lost (docs/hub.md §3.2): `first` after the loss, then
/// twice as long after each failed attempt, at most `limit`. The waits are on the hub's clock (tests advance a manual
/// one).
public struct HubBackoff: Sendable, Equatable {
    public var first: Duration
    public var limit: Duration

    public init(first: Duration = .seconds(1), limit: Duration = .seconds(30)) {
        self.first = max(first, .milliseconds(1))
        self.limit = max(limit, self.first)
    }

    /// The wait before attempt `attempt` (0: the first attempt after the loss).
    public func delay(beforeAttempt attempt: Int) -> Duration {
        var d = first
        for _ in 0..<max(0, min(attempt, 64)) {
            d = d * 2
            if d >= limit { return limit }
        }
        return min(d, limit)
    }
}
