import Synchronization

/// Fans the running image of a `SimulatedHeadset` out to `modeChanges()` observers. Internal.
///
/// A change caused by a request (a jump) is *scheduled*: it is published when the returned closure runs, which the
/// device's link writer does right after handing the reply to the link, so an observer that re-enumerates a USB
/// gadget never overtakes the reply. Scheduled changes are published in the order they were scheduled (running one
/// closure publishes every earlier scheduled change first). A power event publishes at once and discards the
/// scheduled changes not yet published (the power loss overtook them).
final class ModeBroadcaster: Sendable {
    private struct State {
        var published: RunningImage?
        var observers: [UInt64: AsyncStream<RunningImage?>.Continuation] = [:]
        var scheduled: [(token: UInt64, image: RunningImage?)] = []
        var nextID: UInt64 = 0
        var finished = false
    }

    private let state: Mutex<State>

    init(initial: RunningImage?) {
        state = Mutex(State(published: initial))
    }

    /// The image observers were last told about.
    var published: RunningImage? { state.withLock { $0.published } }

    /// A new observer: the published image first, then every change; finishes at `finish()`.
    func stream() -> AsyncStream<RunningImage?> {
        let (stream, continuation) = AsyncStream.makeStream(of: RunningImage?.self, bufferingPolicy: .unbounded)
        let id: UInt64? = state.withLock { s in
            continuation.yield(s.published)
            guard !s.finished else { return nil }
            s.nextID += 1
            s.observers[s.nextID] = continuation
            return s.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Publishes `image` now, dropping scheduled changes.
    func publish(_ image: RunningImage?) {
        state.withLock { s in
            s.scheduled = []
            Self.yield(image, in: &s)
        }
    }

    /// Schedules `image`; the returned closure publishes it (and every earlier scheduled change). Running the closure
    /// again, or after a `publish`, does nothing.
    func schedule(_ image: RunningImage?) -> @Sendable () -> Void {
        let token: UInt64 = state.withLock { s in
            s.nextID += 1
            s.scheduled.append((s.nextID, image))
            return s.nextID
        }
        return { [weak self] in
            self?.state.withLock { s in
                while let first = s.scheduled.first, first.token <= token {
                    s.scheduled.removeFirst()
                    Self.yield(first.image, in: &s)
                }
            }
        }
    }

    /// Ends every observer's stream; later observers get the last image and an immediate end.
    func finish() {
        let observers = state.withLock { s in
            s.finished = true
            s.scheduled = []
            defer { s.observers = [:] }
            return Array(s.observers.values)
        }
        for o in observers { o.finish() }
    }

    private static func yield(_ image: RunningImage?, in s: inout State) {
        guard image != s.published, !s.finished else { return }
        s.published = image
        for o in s.observers.values { o.yield(image) }
    }
}
