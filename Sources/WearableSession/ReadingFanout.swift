import Support
import Synchronization

/// Hands each notification's readings to every listener of a session (`WearableDeviceSession.sensorReadings()`).
///
/// Built for many listeners on few cores: one lock for all listeners (not one per listener), the batch shared by
/// every listener (one array, retained, never copied per listener), a waiting listener handed its batch directly and
/// resumed only after the lock is released (never while it is held), and each listener takes its readings from its
/// batch one at a time without touching the lock again. A listener that is not waiting keeps its undelivered batches
/// in its own queue (at most `limit` of them: the oldest are dropped, as `bufferingNewest`).
final class ReadingFanout: Sendable {
    private typealias Waiter = UnsafeContinuation<[SensorReading]?, Never>

    private struct Listener {
        /// Undelivered batches, oldest first.
        var queue = FIFOQueue<[SensorReading]>()
        var waiter: Waiter?
        var limit: Int?
        var ended = false

        mutating func take() -> [SensorReading]? { queue.popFirst() }

        mutating func append(_ batch: [SensorReading]) {
            queue.append(batch)
            if let limit, queue.count > limit { _ = queue.popFirst() }
        }
    }

    private struct State {
        var listeners: [UInt64: Listener] = [:]
        var nextID: UInt64 = 0
        var finished = false
        /// Reused by `publish` for the waiters to resume (no allocation per notification).
        var resumable: [Waiter] = []

        /// Each listener changed in place (`values.indices` would hold a copy of the dictionary: every change would
        /// copy it).
        mutating func forEachListener(_ body: (inout Listener) -> Void) {
            var i = listeners.values.startIndex
            while i != listeners.values.endIndex {
                body(&listeners.values[i])
                listeners.values.formIndex(after: &i)
            }
        }
    }

    private let state = Mutex(State())

    init() {}

    /// A new listener: every batch published from now on, its readings one at a time (`limit`: batches kept
    /// undelivered at most, nil: all). A listener added after `finish` ends at once.
    func subscribe(limit: Int?) -> SensorReadings {
        let id: UInt64? = state.withLock { s in
            guard !s.finished else { return nil }
            s.nextID += 1
            s.listeners[s.nextID] = Listener(limit: limit.map { max(1, $0) })
            return s.nextID
        }
        return SensorReadings(handle: id.map { Handle(fanout: self, id: $0) })
    }

    /// Delivers `batch` to every listener: waiting ones are resumed once the lock is released.
    func publish(_ batch: [SensorReading]) {
        var waiters: [Waiter] = state.withLock { s in
            guard !s.finished else { return [] }
            var waiters = s.resumable
            s.resumable = []
            s.forEachListener { l in
                if let w = l.waiter {
                    l.waiter = nil
                    waiters.append(w)
                } else {
                    l.append(batch)
                }
            }
            return waiters
        }
        for w in waiters { w.resume(returning: batch) }
        waiters.removeAll(keepingCapacity: true)
        state.withLock { s in if s.resumable.capacity < waiters.capacity { s.resumable = waiters } }
    }

    /// Ends every listener once it has taken what it has (later subscribers end at once).
    func finish() {
        let waiters: [Waiter] = state.withLock { s in
            guard !s.finished else { return [] }
            s.finished = true
            var waiters: [Waiter] = []
            s.forEachListener { l in
                l.ended = true
                if let w = l.waiter {
                    l.waiter = nil
                    waiters.append(w)
                }
            }
            return waiters
        }
        for w in waiters { w.resume(returning: nil) }
    }

    /// Current listeners (for tests and diagnostics).
    var listenerCount: Int { state.withLock { $0.listeners.count } }

    /// The next batch of listener `id`, waiting for one; nil once it ended (finished, cancelled, removed).
    /// Cancellation: the listener's `AsyncStream(unfolding:onCancel:)` removes it (`remove`), which resumes a wait.
    fileprivate func next(_ id: UInt64) async -> [SensorReading]? {
        await withUnsafeContinuation { (c: Waiter) in
            let now: [SensorReading]?? = state.withLock { s in
                // In place (no copy of the listener's queue).
                guard let index = s.listeners.index(forKey: id) else { return .some(nil) }
                if let batch = s.listeners.values[index].take() { return .some(batch) }
                if s.listeners.values[index].ended || Task.isCancelled {
                    s.listeners.remove(at: index)
                    return .some(nil)
                }
                s.listeners.values[index].waiter = c
                return .none
            }
            if let now { c.resume(returning: now) }
        }
    }

    fileprivate func remove(_ id: UInt64) {
        let waiter = state.withLock { $0.listeners.removeValue(forKey: id)?.waiter }
        waiter?.resume(returning: nil)
    }

    /// One listener's subscription: removed when its sequence and iterators are gone.
    final class Handle: Sendable {
        private let fanout: ReadingFanout
        private let id: UInt64

        init(fanout: ReadingFanout, id: UInt64) {
            self.fanout = fanout
            self.id = id
        }

        deinit { fanout.remove(id) }

        /// The next batch; nil once the listener ended. A cancelled task's listener ends (and is removed).
        func next() async -> [SensorReading]? {
            await withTaskCancellationHandler { await fanout.next(id) } onCancel: { fanout.remove(id) }
        }
    }
}

/// The sensor readings of one listener of a `WearableDeviceSession` (`sensorReadings()`): every sample from the
/// subscription on, in order, until the session closes (or the iterating task is cancelled). Iterate it once, from
/// one task, as an `AsyncStream`.
///
/// A concrete sequence rather than an `AsyncStream`: the readings of a notification are handed over at once and
/// taken one by one from the iterator's own batch (an index step, no lock, no cancellation record, no generic
/// runtime lookups per reading); the iterator waits only when its batch is used up. With 100 listeners on two
/// cores that per-reading cost was most of the time from a notification's arrival to its last listener.
public struct SensorReadings: AsyncSequence, Sendable {
    public typealias Element = SensorReading
    public typealias Failure = Never

    let handle: ReadingFanout.Handle?

    public func makeAsyncIterator() -> Iterator { Iterator(handle: handle) }

    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = SensorReading
        public typealias Failure = Never

        private let handle: ReadingFanout.Handle?
        private var batch: [SensorReading] = []
        private var index = 0

        init(handle: ReadingFanout.Handle?) { self.handle = handle }

        public mutating func next() async -> SensorReading? {
            if let reading = fromBatch() { return reading }
            return refill(await Self.nextBatch(handle))
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> SensorReading? {
            if let reading = fromBatch() { return reading }
            return refill(await Self.nextBatch(handle))
        }

        /// The batch's next reading, if it has one left.
        private mutating func fromBatch() -> SensorReading? {
            guard index < batch.count else { return nil }
            defer { index += 1 }
            return batch[index]
        }

        /// A new batch, its first reading taken (nil: the listener ended).
        private mutating func refill(_ next: [SensorReading]) -> SensorReading? {
            batch = next
            index = 1
            return batch.first
        }

        /// The next batch that holds readings; empty once the listener ended.
        private static func nextBatch(_ handle: ReadingFanout.Handle?) async -> [SensorReading] {
            while let handle, let next = await handle.next() {
                if !next.isEmpty { return next }
            }
            return []
        }
    }
}
