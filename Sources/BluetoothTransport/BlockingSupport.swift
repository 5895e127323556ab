import CBluetooth
import Glibc
import Synchronization
import Transport

/// Waiting for a socket on a dedicated thread (connect completion, accept), so that nothing blocks a thread of Swift's
/// cooperative pool; threads themselves come from Transport's `DedicatedThread`. Internal.
enum BluetoothThread {
    /// What `wait(for:on:wake:timeout:)` saw.
    enum WaitOutcome: Sendable, Equatable {
        /// The descriptor is ready; these are its `revents` (may include POLLERR/POLLHUP).
        case ready(Int16)
        /// The wake signal fired (cancellation or a listener's `close()`).
        case woken
        /// The timeout passed first.
        case timedOut
    }

    /// Waits on a dedicated thread until `fd` reports one of `events` (or an error/hang-up), `wake` fires, or
    /// `timeout` (nil: none) passes. Cancelling the calling task fires `wake`.
    ///
    /// Unlike `DedicatedThread.run`, this returns only after the thread has stopped polling, so the caller may close `fd` (and `wake`)
    /// as soon as it returns: no thread touches them afterwards.
    static func wait(for events: Int16, on fd: Int32, wake: WakeSignal, timeout: Duration? = nil, name: String) async throws(TransportError) -> WaitOutcome {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let outcome: Result<WaitOutcome, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<WaitOutcome, TransportError>, Never>) in
                do throws(TransportError) {
                    try DedicatedThread.spawn(name: name) {
                        continuation.resume(returning: .success(pollLoop(fd: fd, events: events, wake: wake, deadline: deadline)))
                    }
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        } onCancel: {
            wake.fire()
        }
        return try outcome.get()
    }

    /// poll(2) on `fd` and the wake pipe until something happens; runs on the dedicated thread.
    private static func pollLoop(fd: Int32, events: Int16, wake: WakeSignal, deadline: ContinuousClock.Instant?) -> WaitOutcome {
        wake.noteWatched(true)
        defer { wake.noteWatched(false) }
        while true {
            var timeoutMs: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                if left <= .zero { return .timedOut }
                let (seconds, attoseconds) = left.components
                let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
                timeoutMs = Int32(clamping: ms)
            }
            var fds = [
                pollfd(fd: fd, events: events, revents: 0),
                pollfd(fd: wake.pollDescriptor, events: Int16(POLLIN), revents: 0),
            ]
            let n = poll(&fds, 2, timeoutMs)
            if n < 0 {
                let e = errno
                if e == EINTR || e == EAGAIN { continue }
                // Nothing sensible left to wait on: report "ready" so the caller looks at the descriptor itself.
                return .ready(Int16(POLLERR))
            }
            if fds[1].revents != 0 { return .woken }
            if fds[0].revents != 0 { return .ready(fds[0].revents) }
        }
    }
}

/// A self-pipe that wakes a `poll` on a dedicated thread. `fire()` and `close()` are safe from any thread, in any
/// order, any number of times. Internal.
final class WakeSignal: Sendable {
    private struct State {
        var readFD: Int32
        var writeFD: Int32
        var fired = false
        var closed = false
        var watchers = 0
    }

    private let state: Mutex<State>
    /// The read end, for `poll`; readable once `fire()` was called. Valid until `close()`.
    let pollDescriptor: Int32

    /// Creates the pipe (both ends non-blocking and close-on-exec).
    init() throws(TransportError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let e = errno
            throw TransportError(.io, "cannot create a pipe: \(POSIX.describe(e))", errno: e)
        }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        pollDescriptor = ends[0]
        state = Mutex(State(readFD: ends[0], writeFD: ends[1]))
    }

    deinit { close() }

    /// Makes the read end readable (once; later calls do nothing).
    func fire() {
        state.withLock { s in
            guard !s.closed, !s.fired else { return }
            s.fired = true
            var byte: UInt8 = 1
            _ = Glibc.write(s.writeFD, &byte, 1)
        }
    }

    /// Whether `fire()` was called.
    var hasFired: Bool { state.withLock { $0.fired } }

    /// Whether a dedicated thread is polling on this signal now, i.e. a `BluetoothThread.wait` is under way on its
    /// thread (for tests and diagnostics).
    var isWatched: Bool { state.withLock { $0.watchers > 0 } }

    /// Called by the polling thread as it starts and stops watching.
    fileprivate func noteWatched(_ watching: Bool) {
        state.withLock { $0.watchers += watching ? 1 : -1 }
    }

    /// Closes both ends. Idempotent.
    func close() {
        state.withLock { s in
            guard !s.closed else { return }
            s.closed = true
            _ = Glibc.close(s.readFD)
            _ = Glibc.close(s.writeFD)
        }
    }
}


