import Synchronization

/// A clock whose time moves only when a test calls `advance(by:)`: code under test that sleeps on it (timeouts,
/// retransmission timers, quiet periods) runs on virtual time, so a test of a 10 s timeout takes no 10 s and never
/// races the machine's load. Tests wait for a sleep to be registered (`pendingSleeps`, `nextDeadline`) before they
/// advance, instead of sleeping themselves.
public final class ManualClock: Clock, Sendable {
    public typealias Duration = Swift.Duration

    /// A point on the manual clock: the time since the clock was made.
    public struct Instant: InstantProtocol, CustomStringConvertible {
        public var offset: Duration
        public init(offset: Duration) { self.offset = offset }
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        public var description: String { "t+\(offset)" }
    }

    private struct Sleeper {
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [UInt64: Sleeper] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .zero }

    /// Returns once the clock has been advanced to `deadline` (at once if it is there already); throws
    /// `CancellationError` as soon as the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = state.withLock { s in
                    if deadline <= s.now { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time forward by `duration` and wakes every sleep whose deadline has come, earliest first.
    public func advance(by duration: Duration) {
        let due: [Sleeper] = state.withLock { s in
            s.now = s.now.advanced(by: duration)
            let now = s.now
            let due = s.sleepers.filter { $0.value.deadline <= now }.sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
            for (id, _) in due { s.sleepers[id] = nil }
            return due.map(\.value)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Sleeps registered and not yet woken or cancelled.
    public var pendingSleeps: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline of the pending sleeps, as time since the clock was made (nil when none).
    public var nextDeadline: Duration? { state.withLock { $0.sleepers.values.map(\.deadline.offset).min() } }

    /// The deadlines of the pending sleeps, earliest first.
    public var deadlines: [Duration] { state.withLock { $0.sleepers.values.map(\.deadline.offset).sorted() } }
}
