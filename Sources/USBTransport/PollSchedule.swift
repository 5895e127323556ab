/// When `USBHIDTransport.receive()` polls GET_REPORT 0xF0 (design contract, "Host polling").
///
/// - While requests are outstanding:
///   - `.adaptive` (default): the first `immediatePolls` polls go out at once, then the delay doubles from 1 ms up
///     to `maximumDelay` (20 ms): 0, 0, 0, 1, 2, 4, 8, 16, 20, 20, ... ms.
///   - `.fixed(interval)` (the vendor's behaviour with 50 ms): the interval before every poll, the first included.
/// - With nothing outstanding the transport polls every `idleInterval` for pushes (nil: never), sleeping first.
/// The schedule restarts whenever a packet arrives or a new request is sent.
public enum PollSchedule: Sendable, Hashable {
    /// Poll at once, then back off.
    case adaptive
    /// Sleep this long before every poll.
    case fixed(Duration)

    /// Polls made without delay before the adaptive back-off starts.
    public static let immediatePolls = 3
    /// The longest adaptive delay.
    public static let maximumDelay: Duration = .milliseconds(20)

    /// The schedule for an optional fixed interval: nil or a non-positive interval is adaptive.
    public init(interval: Duration?) {
        if let interval, interval > .zero { self = .fixed(interval) } else { self = .adaptive }
    }

    /// The delay before the next poll when `emptyPolls` polls in a row found nothing ready (0 for the first poll
    /// after a request or a packet). Negative counts are treated as 0.
    public func delay(afterEmptyPolls emptyPolls: Int) -> Duration {
        switch self {
        case let .fixed(interval):
            return interval
        case .adaptive:
            let backoff = emptyPolls - Self.immediatePolls
            guard backoff >= 0 else { return .zero }
            // 1 ms << backoff, capped before it could overflow.
            guard backoff < 5 else { return Self.maximumDelay }
            return min(.milliseconds(1 << backoff), Self.maximumDelay)
        }
    }
}
