import Synchronization

/// Fans elements out to any number of `AsyncStream` subscribers: the one broadcaster of the package (session pushes
/// and events, the simulator's mode changes, update progress). Thread-safe; yielding never waits for a consumer
/// (each subscriber buffers by its own policy).
///
/// Once finished, a new subscriber receives the final element (if any) and ends at once.
package final class Broadcast<Element: Sendable>: Sendable {
    private struct State {
        var subscribers: [UInt64: AsyncStream<Element>.Continuation] = [:]
        var nextID: UInt64 = 0
        var finished = false
        var last: Element?
    }

    private let state = Mutex(State())
    /// Subscribers whose stream ended, to be dropped at the next use of `state`. `onTermination` runs with the
    /// consumer task's status locked (a cancelled `for await`), and a `yield` holding `state` resumes that task, which
    /// needs the same lock: `onTermination` taking `state` deadlocked both threads. This lock is never held while a
    /// continuation is called.
    private let ended = Mutex<[UInt64]>([])

    package init() {}

    /// A new subscription: `replay` is delivered before anything yielded later.
    package func subscribe(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded,
                           replay: [Element] = []) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let id: UInt64? = state.withLock { s in
            dropEnded(&s)
            guard !s.finished else {
                if let last = s.last { continuation.yield(last) }
                return nil
            }
            for element in replay { continuation.yield(element) }
            s.nextID += 1
            s.subscribers[s.nextID] = continuation
            return s.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.ended.withLock { $0.append(id) }
        }
        return stream
    }

    /// Delivers `element` to every subscriber (nothing after `finish`).
    package func yield(_ element: Element) {
        state.withLock { s in
            dropEnded(&s)
            guard !s.finished else { return }
            for continuation in s.subscribers.values { continuation.yield(element) }
        }
    }

    /// Runs `body` and delivers what it returns, atomically with respect to other yields and subscriptions (for
    /// state that must be read and published together, such as "the latest value").
    package func yield(_ body: () -> Element?) {
        state.withLock { s in
            dropEnded(&s)
            guard !s.finished, let element = body() else { return }
            for continuation in s.subscribers.values { continuation.yield(element) }
        }
    }

    /// Sends `last` (if any) to every subscriber, ends every stream, and answers later subscribers with `last`.
    package func finish(last: Element? = nil) {
        let subscribers: [AsyncStream<Element>.Continuation] = state.withLock { s in
            guard !s.finished else { return [] }
            s.finished = true
            s.last = last
            defer { s.subscribers = [:] }
            return Array(s.subscribers.values)
        }
        for continuation in subscribers {
            if let last { continuation.yield(last) }
            continuation.finish()
        }
    }

    /// Whether `finish` was called.
    package var isFinished: Bool { state.withLock { $0.finished } }

    /// Current subscribers (for tests and diagnostics).
    package var subscriberCount: Int {
        state.withLock { s in
            dropEnded(&s)
            return s.subscribers.count
        }
    }

    /// Forgets the subscribers whose stream ended (call with `state` locked).
    private func dropEnded(_ s: inout State) {
        let ids = ended.withLock { list in
            defer { list = [] }
            return list
        }
        for id in ids { s.subscribers.removeValue(forKey: id) }
    }
}
