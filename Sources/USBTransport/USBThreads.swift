import CLibUSB
import Glibc
import Synchronization
import Transport

/// The receive loop's sleep between polls, which a `send` can cut short ("a request is now outstanding: poll").
/// Internal.
///
/// - `sleep` returns `true` when a kick ended it early (or a kick happened since `generation` was read), `false`
///   when the time ran out, a cancellation arrived, or the waker was closed (the caller re-checks those).
/// - Only one sleeper at a time (the transport allows one pending `receive`).
final class USBPollWaker: Sendable {
    private struct Sleeper {
        var id: UInt64
        var interruptible: Bool
        var continuation: CheckedContinuation<Bool, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var generation: UInt64 = 0
        var closed = false
        var nextID: UInt64 = 0
        var sleeper: Sleeper?
    }

    private let state = Mutex(State())

    /// The current kick generation; pass it to `sleep` to notice kicks that happen before the sleep starts.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Whether a sleep is under way (tests wait for it instead of sleeping a while).
    var hasSleeper: Bool { state.withLock { $0.sleeper != nil } }

    /// Records a kick and wakes an interruptible sleeper.
    func kick() {
        let woken: Sleeper? = state.withLock { s in
            s.generation &+= 1
            guard let sleeper = s.sleeper, sleeper.interruptible else { return nil }
            s.sleeper = nil
            return sleeper
        }
        woken?.timer?.cancel()
        woken?.continuation.resume(returning: true)
    }

    /// Wakes any sleeper for good; later sleeps return at once.
    func close() {
        let woken: Sleeper? = state.withLock { s in
            s.closed = true
            return s.sleeper.take()
        }
        woken?.timer?.cancel()
        woken?.continuation.resume(returning: false)
    }

    /// Sleeps for `duration` (nil: until woken). See the type's contract.
    func sleep(for duration: Duration?, generation: UInt64, interruptible: Bool) async -> Bool {
        let id: UInt64 = state.withLock { s in
            s.nextID &+= 1
            return s.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let immediate: Bool? = state.withLock { s in
                    if interruptible && s.generation != generation { return true }
                    if s.closed || Task.isCancelled { return false }
                    s.sleeper = Sleeper(id: id, interruptible: interruptible, continuation: continuation, timer: nil)
                    return nil
                }
                if let immediate {
                    continuation.resume(returning: immediate)
                    return
                }
                guard let duration else { return }
                let timer = Task { [weak self] in
                    try? await Task.sleep(for: duration)
                    self?.wake(id, kicked: false)
                }
                let stillWaiting = state.withLock { s -> Bool in
                    guard s.sleeper?.id == id else { return false }
                    s.sleeper?.timer = timer
                    return true
                }
                if !stillWaiting { timer.cancel() }
            }
        } onCancel: {
            wake(id, kicked: false)
        }
    }

    private func wake(_ id: UInt64, kicked: Bool) {
        let woken: Sleeper? = state.withLock { s in
            guard s.sleeper?.id == id else { return nil }
            return s.sleeper.take()
        }
        woken?.timer?.cancel()
        woken?.continuation.resume(returning: kicked)
    }
}
