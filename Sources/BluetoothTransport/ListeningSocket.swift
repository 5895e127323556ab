import Glibc
import Synchronization
import Transport

/// A listening socket shared by the `accept()` calls of one listener (RFCOMM, ATT): accept(2) runs on it while it is
/// open, waits for a connection go to the I/O reactor (`SocketWait`), and `close()` wakes every wait. The descriptor is
/// released by whichever comes last, `close()` or the last wait waking up, so no wait ever watches a closed (and
/// perhaps reused) descriptor number.
final class ListeningSocket: Sendable {
    private struct State {
        var fd: Int32
        var closed = false
        var released = false
        /// The waits under way; the last one out after `close()` releases the socket.
        var waiters: [Int: WakeSignal] = [:]
        var nextWaiter = 0
    }

    private let state: Mutex<State>

    /// Takes over `fd` (a socket that listens).
    init(adopting fd: Int32) {
        state = Mutex(State(fd: fd))
    }

    /// `body` with the descriptor while the socket is open (it runs under the socket's lock: a non-blocking call such as
    /// accept(2), nothing that waits); nil once closed.
    func withDescriptor<T: Sendable>(_ body: (Int32) -> T) -> T? {
        state.withLock { s in s.closed ? nil : body(s.fd) }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// The waits watching the socket on the reactor now (for tests and diagnostics).
    var pendingWaits: Int {
        state.withLock { s in s.waiters.values.filter { $0.isWatched }.count }
    }

    /// Waits on the I/O reactor until the socket is readable (`.ready`) or `timeout` passes (`.timedOut`). Throws
    /// `closedError()` when the socket is or gets closed, `CancellationError` when the task is cancelled.
    func waitReadable(timeout: Duration? = nil, closedError: @autoclosure () -> TransportError) async throws -> SocketWait.Outcome {
        let wake = WakeSignal()
        let waiting: (id: Int, fd: Int32)? = state.withLock { s in
            guard !s.closed else { return nil }
            let id = s.nextWaiter
            s.nextWaiter += 1
            s.waiters[id] = wake
            return (id, s.fd)
        }
        guard let waiting else { throw closedError() }
        let outcome: SocketWait.Outcome
        do {
            defer { finishWaiting(waiting.id) }
            outcome = try await SocketWait.wait(for: .readable, on: waiting.fd, wake: wake, timeout: timeout)
        }
        if outcome == .woken {
            if isClosed { throw closedError() }
            throw CancellationError()
        }
        return outcome
    }

    /// Forgets a wait; the last one out after `close()` releases the socket.
    private func finishWaiting(_ id: Int) {
        let release: Int32? = state.withLock { s in
            s.waiters[id] = nil
            guard s.closed, s.waiters.isEmpty, !s.released else { return nil }
            s.released = true
            return s.fd
        }
        if let release { POSIX.close(release) }
    }

    /// Closes: wakes the waits (they throw their `closedError`) and releases the socket now if none is under way, else
    /// when the last one wakes up. False when it was closed already.
    @discardableResult
    func close() -> Bool {
        let closing: (release: Int32?, wakers: [WakeSignal])? = state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            var release: Int32?
            if s.waiters.isEmpty {
                s.released = true
                release = s.fd
            }
            return (release, Array(s.waiters.values))
        }
        guard let closing else { return false }
        for wake in closing.wakers { wake.fire() }
        if let fd = closing.release { POSIX.close(fd) }
        return true
    }
}
