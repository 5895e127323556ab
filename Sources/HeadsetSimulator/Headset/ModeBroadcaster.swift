import Support
import Synchronization
import Transport

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
        var scheduled: [(token: UInt64, image: RunningImage?)] = []
        var nextToken: UInt64 = 0
        var finished = false
    }

    private let state: Mutex<State>
    /// The observers (taken under `state`'s lock, so the image a new observer starts with and later changes agree).
    private let observers = Broadcast<RunningImage?>()

    init(initial: RunningImage?) {
        state = Mutex(State(published: initial))
    }

    /// The image observers were last told about.
    var published: RunningImage? { state.withLock { $0.published } }

    /// A new observer: the published image first, then every change; finishes at `finish()`.
    func stream() -> AsyncStream<RunningImage?> {
        state.withLock { s in
            guard !s.finished else {
                let (stream, continuation) = AsyncStream.makeStream(of: RunningImage?.self)
                continuation.yield(s.published)
                continuation.finish()
                return stream
            }
            return observers.subscribe(replay: [s.published])
        }
    }

    /// Publishes `image` now, dropping scheduled changes.
    func publish(_ image: RunningImage?) {
        state.withLock { s in
            s.scheduled = []
            publish(image, in: &s)
        }
    }

    /// Schedules `image`; the returned closure publishes it (and every earlier scheduled change). Running the closure
    /// again, or after a `publish`, does nothing.
    func schedule(_ image: RunningImage?) -> @Sendable () -> Void {
        let token: UInt64 = state.withLock { s in
            s.nextToken += 1
            s.scheduled.append((s.nextToken, image))
            return s.nextToken
        }
        return { [weak self] in
            guard let self else { return }
            state.withLock { s in
                while let first = s.scheduled.first, first.token <= token {
                    s.scheduled.removeFirst()
                    publish(first.image, in: &s)
                }
            }
        }
    }

    /// Ends every observer's stream; later observers get the last image and an immediate end.
    func finish() {
        state.withLock { s in
            s.finished = true
            s.scheduled = []
        }
        observers.finish()
    }

    private func publish(_ image: RunningImage?, in s: inout State) {
        guard image != s.published, !s.finished else { return }
        s.published = image
        observers.yield(image)
    }
}
