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

    /// Takes the next connection queued on the socket (accept(2), close-on-exec): its descriptor and what `peer` makes
    /// of its address; nil when none is queued (wait with `waitReadable`). A connection that went away before it was
    /// taken is skipped, as accept(2) advises. Throws `closedError()` once closed, `.io` naming `endpoint` for any
    /// other failure (resource exhaustion). One accept for every listener (RFCOMM, ATT).
    func acceptNext<Peer: Sendable>(
        endpoint: String, closedError: @autoclosure () -> TransportError, peer: (UnsafeRawBufferPointer) -> Peer
    ) throws -> (fd: Int32, peer: Peer)? {
        while true {
            let result: (fd: Int32, errno: Int32, peer: Peer?)? = withDescriptor { listening in
                var storage = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                return withUnsafeMutableBytes(of: &storage) { raw in
                    let fd = Glibc.accept(listening, raw.baseAddress?.assumingMemoryBound(to: sockaddr.self), &length)
                    guard fd >= 0 else { return (fd, errno, nil) }
                    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                    return (fd, 0, peer(UnsafeRawBufferPointer(rebasing: raw[..<min(Int(length), raw.count)])))
                }
            }
            guard let result else { throw closedError() }
            if result.fd >= 0, let peer = result.peer { return (result.fd, peer) }
            switch result.errno {
            case EAGAIN, EWOULDBLOCK:
                return nil
            case EINTR, ECONNABORTED, EPROTO, ECONNRESET, EHOSTDOWN, EHOSTUNREACH, ENETDOWN, ENOPROTOOPT, EOPNOTSUPP:
                continue
            default:
                throw TransportError(.io, "cannot accept a connection on \(endpoint): \(POSIX.describe(result.errno))", errno: result.errno)
            }
        }
    }

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
