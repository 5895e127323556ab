import Support
import Synchronization

/// Progress events for any number of consumers: each subscription starts with the events sent so far (the newest
/// `replayLimit`) and then gets every later one, in the one order every consumer sees; all end with `finish()`.
/// Publishing never waits for a consumer (each keeps up to `replayLimit` undelivered events, the newest).
public final class ProgressFeed<Event: Sendable>: Sendable {
    private struct State {
        var sent: [Event] = []
        var latest: Event?
    }

    private let state = Mutex(State())
    private let broadcast = Broadcast<Event>()
    public let replayLimit: Int

    public init(replayLimit: Int = 1024) {
        self.replayLimit = Swift.max(1, replayLimit)
    }

    /// Sends `event` to every consumer.
    public func publish(_ event: Event) {
        publish { event }
    }

    /// Sends what `make` returns (nothing when nil), atomically with other publications and subscriptions: `make`
    /// may read state that must go out in order.
    public func publish(_ make: () -> Event?) {
        state.withLock { s in
            guard let event = make() else { return }
            s.latest = event
            s.sent.append(event)
            if s.sent.count > replayLimit { s.sent.removeFirst(s.sent.count - replayLimit) }
            // Under the lock: every consumer sees the events in one order, and a new one starts at the latest.
            broadcast.yield(event)
        }
    }

    /// A new consumer: the events sent so far (the newest `replayLimit`), then every later one.
    public func subscribe() -> AsyncStream<Event> {
        state.withLock { s in broadcast.subscribe(bufferingPolicy: .bufferingNewest(replayLimit), replay: s.sent) }
    }

    /// Ends every consumer's stream; a later subscription ends at once.
    public func finish() {
        state.withLock { _ in broadcast.finish() }
    }

    /// The latest event published.
    public var latest: Event? { state.withLock { $0.latest } }
}
