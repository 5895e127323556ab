import Glibc
import Logging
import Support
import Synchronization

/// What `ImmediateTransport.receiveNow()` got.
package enum ImmediateRead: Sendable {
    case bytes([UInt8])
    /// Nothing to read now (`whenReadable` tells when there is).
    case wouldBlock
    /// The end of the stream or an error, as `receive()` would throw it.
    case failed(TransportError)
}

/// What `ImmediateTransport.sendNow(_:)` did.
package enum ImmediateWrite: Sendable {
    /// Everything was written.
    case sent
    /// Only the first n bytes were written (the descriptor is full, or a `send` is in progress): the rest goes with
    /// `send`.
    case partial(Int)
    /// An error, as `send` would throw it; nothing more can be written.
    case failed(TransportError)
}

/// A transport whose reads and writes can be tried without suspending, and whose readability can be watched with a
/// one-shot handler: what lets `ConditionedTransport` move its chunks on the reactor's thread (from its timers and
/// readiness handlers) instead of in two tasks that each wake up once per chunk.
package protocol ImmediateTransport: Transport {
    /// One read without waiting. Only for an owner that never calls `receive()`.
    func receiveNow() -> ImmediateRead
    /// Calls `handler` once (on the reactor's thread) when a read may succeed, or when the transport closes.
    func whenReadable(_ handler: @escaping @Sendable () -> Void) throws(TransportError)
    /// Writes as much of `bytes` as can be written without waiting.
    func sendNow(_ bytes: [UInt8]) -> ImmediateWrite
}

/// A `Transport` over a non-blocking stream descriptor: a socket, a tty, a pty master, a FIFO opened read-write.
///
/// Contract (in addition to `Transport`'s):
/// - The transport owns the descriptor: it is switched to non-blocking mode, and closed exactly once, by `close()` or
///   when the transport is deinitialised.
/// - `receive()` performs one `read` of at most 64 KiB and returns what it got. End of stream, `ECONNRESET` and
///   `EIO` (a pty master whose slave side was closed, a hung-up tty) throw `TransportError.closed`. On a tty a read
///   of 0 bytes only counts as end of stream when the tty is hung up (with `VMIN = 0` an idle tty also reads 0).
/// - `send(_:)` writes everything, waiting for writability on `EAGAIN`; concurrent sends are queued in FIFO order on
///   an async lock, never by blocking a thread. Sockets are written with `MSG_NOSIGNAL`, so a vanished peer yields
///   `.closed` instead of SIGPIPE.
/// - All waiting happens on the shared `IOReactor` thread; no call blocks a cooperative-pool thread.
/// - Cancellation is checked before every syscall and while waiting; bytes are only read when they are about to be
///   returned, so a cancelled `receive` never loses data.
/// - With a logger at `.trace`, every chunk sent or received is logged in hex (first 512 bytes of each chunk).
public final class FileDescriptorTransport: ImmediateTransport {
    /// See `Transport.peerDescription`.
    public let peerDescription: String
    /// See `Transport.framing`. Stream descriptors are `.byteStream` unless told otherwise.
    public let framing: LinkFraming

    /// Largest chunk returned by one `receive()`.
    static let maximumChunk = 64 * 1024

    private struct State {
        var fd: Int32
        var closed = false
        var receiving = false
        /// A `send` is writing (it may wait for writability between writes): `sendNow` must not come between.
        var sending = false
        let scratch: UnsafeMutableRawBufferPointer
    }

    private enum ReadOutcome {
        case bytes([UInt8])
        case endOfStream
        case failed(Int32)
        case closed
    }

    private let state: Mutex<State>
    private let reactor: IOReactor
    private let registration: IOReactor.Registration
    private let sendLock = AsyncLock()
    private let isSocket: Bool
    private let isTTY: Bool
    private let logger: Logger?

    /// Takes ownership of `fd` (a connected socket, tty, pty master, …) and makes it non-blocking.
    ///
    /// - Throws: `TransportError(.io)` if the descriptor is invalid or the I/O reactor cannot start. The descriptor is
    ///   closed when this initialiser throws.
    public init(adopting fd: Int32, peerDescription: String, framing: LinkFraming = .byteStream, logger: Logger? = nil) throws {
        if let e = POSIX.setNonBlocking(fd) {
            POSIX.close(fd)
            throw TransportError(.io, "\(peerDescription): cannot use descriptor \(fd): \(POSIX.describe(e))", errno: e)
        }
        let reactor: IOReactor
        let registration: IOReactor.Registration
        do {
            reactor = try IOReactor.shared()
            registration = try reactor.register(fd)
        } catch {
            POSIX.close(fd)
            throw error
        }
        self.reactor = reactor
        self.registration = registration
        self.peerDescription = peerDescription
        self.framing = framing
        self.logger = logger
        self.isSocket = POSIX.isSocket(fd)
        self.isTTY = isatty(fd) == 1
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.maximumChunk, alignment: 16)
        self.state = Mutex(State(fd: fd, scratch: scratch))
        logger?.trace("opened \(peerDescription) on descriptor \(fd)")
    }

    deinit {
        let fd: Int32? = state.withLock { s in
            defer { s.closed = true }
            return s.closed ? nil : s.fd
        }
        if let fd {
            reactor.deregister(registration, failing: closedError())
            Self.release(fd, isTTY: isTTY)
        }
        state.withLock { $0.scratch.deallocate() }
    }

    private func closedError() -> TransportError {
        TransportError(.closed, "\(peerDescription) is closed")
    }

    /// See `Transport.receive()`.
    public nonisolated(nonsending) func receive() async throws -> [UInt8] {
        try state.withLock { s throws(TransportError) in
            if s.closed { throw closedError() }
            if s.receiving {
                throw TransportError(.io, "\(peerDescription): receive() called while another receive() is pending")
            }
            s.receiving = true
        }
        defer { state.withLock { $0.receiving = false } }
        while true {
            try Task.checkCancellation()
            switch readOnce() {
            case .bytes(let bytes):
                logger?.trace("\(peerDescription) received \(bytes.count) bytes: \(hexDump(bytes))")
                return bytes
            case .endOfStream:
                throw TransportError(.closed, "\(peerDescription): the peer closed the connection")
            case .closed:
                throw closedError()
            case .failed(let e):
                switch e {
                case EAGAIN, EWOULDBLOCK:
                    try await reactor.wait(.readable, on: registration)
                case EINTR:
                    continue
                default:
                    throw Self.ioError(e, peer: peerDescription, operation: "receive")
                }
            }
        }
    }

    /// One non-blocking read into the scratch buffer.
    private func readOnce() -> ReadOutcome {
        state.withLock { s in
            guard !s.closed else { return .closed }
            let n = Glibc.read(s.fd, s.scratch.baseAddress, s.scratch.count)
            if n > 0 { return .bytes(Array(UnsafeRawBufferPointer(rebasing: s.scratch[..<n]))) }
            if n < 0 { return .failed(errno) }
            // A tty with VMIN = 0 reads 0 when idle; only a hung-up tty is at its end.
            if isTTY && !Self.isHungUp(s.fd) { return .failed(EAGAIN) }
            return .endOfStream
        }
    }

    /// See `ImmediateTransport.receiveNow()`: one read, as `receive()` does, without waiting.
    package func receiveNow() -> ImmediateRead {
        while true {
            switch readOnce() {
            case .bytes(let bytes):
                logger?.trace("\(peerDescription) received \(bytes.count) bytes: \(hexDump(bytes))")
                return .bytes(bytes)
            case .endOfStream:
                return .failed(TransportError(.closed, "\(peerDescription): the peer closed the connection"))
            case .closed:
                return .failed(closedError())
            case .failed(let e):
                switch e {
                case EAGAIN, EWOULDBLOCK: return .wouldBlock
                case EINTR: continue
                default: return .failed(Self.ioError(e, peer: peerDescription, operation: "receive"))
                }
            }
        }
    }

    /// See `ImmediateTransport.whenReadable(_:)`.
    package func whenReadable(_ handler: @escaping @Sendable () -> Void) throws(TransportError) {
        try reactor.notify(.readable, on: registration, handler)
    }

    /// See `ImmediateTransport.sendNow(_:)`: writes what the descriptor takes now, never between the writes of a
    /// `send` in progress.
    package func sendNow(_ bytes: [UInt8]) -> ImmediateWrite {
        let outcome: ImmediateWrite = bytes.withUnsafeBytes { buffer in
            state.withLock { s in
                guard !s.closed else { return .failed(closedError()) }
                if s.sending { return .partial(0) }
                var offset = 0
                while offset < buffer.count {
                    let start = buffer.baseAddress! + offset
                    let n = isSocket
                        ? Glibc.send(s.fd, start, buffer.count - offset, Int32(MSG_NOSIGNAL))
                        : Glibc.write(s.fd, start, buffer.count - offset)
                    if n >= 0 {
                        offset += n
                        continue
                    }
                    switch errno {
                    case EINTR: continue
                    case EAGAIN, EWOULDBLOCK: return .partial(offset)
                    case let e: return .failed(Self.ioError(e, peer: peerDescription, operation: "send"))
                    }
                }
                return .sent
            }
        }
        if case .sent = outcome { logger?.trace("\(peerDescription) sent \(bytes.count) bytes: \(hexDump(bytes))") }
        return outcome
    }

    /// See `Transport.send(_:)`.
    public nonisolated(nonsending) func send(_ bytes: [UInt8]) async throws {
        try await sendLock.withLock {
            state.withLock { $0.sending = true }
            defer { state.withLock { $0.sending = false } }
            var offset = 0
            repeat {
                try Task.checkCancellation()
                let attempt: IOAttempt = bytes.withUnsafeBytes { buffer in
                    state.withLock { s in
                        guard !s.closed else { return .closed }
                        if buffer.count == 0 { return .done(0) }
                        let start = buffer.baseAddress! + offset
                        let n = isSocket
                            ? Glibc.send(s.fd, start, buffer.count - offset, Int32(MSG_NOSIGNAL))
                            : Glibc.write(s.fd, start, buffer.count - offset)
                        return n >= 0 ? .done(n) : .failed(errno)
                    }
                }
                switch attempt {
                case .done(let n):
                    offset += n
                case .closed:
                    throw closedError()
                case .failed(let e):
                    switch e {
                    case EAGAIN, EWOULDBLOCK:
                        try await reactor.wait(.writable, on: registration)
                    case EINTR:
                        continue
                    default:
                        throw Self.ioError(e, peer: peerDescription, operation: "send")
                    }
                }
            } while offset < bytes.count
        }
        logger?.trace("\(peerDescription) sent \(bytes.count) bytes: \(hexDump(bytes))")
    }

    /// Whether a `receive()` is parked waiting for data: in progress and suspended on the reactor, not merely
    /// started (for tests and diagnostics).
    var hasPendingReceive: Bool {
        state.withLock { $0.receiving } && reactor.hasWaiter(.readable, on: registration)
    }

    /// The descriptor while open (nil after `close()`); for diagnostics and tests. Do not close it yourself.
    var descriptor: Int32? {
        state.withLock { $0.closed ? nil : $0.fd }
    }

    /// See `Transport.close()`. Fails a pending receive/send with `.closed` and releases the descriptor once.
    ///
    /// Closing a tty can block while the driver drains queued output (up to its `closing_wait`, 30 s by default),
    /// so for ttys the final `close(2)` runs on a dedicated thread and this call awaits it without blocking the pool.
    public nonisolated(nonsending) func close() async {
        guard let fd = markClosed() else { return }
        if isTTY {
            _ = try? await Blocking.run("tuneup-close") { POSIX.close(fd) }
        } else {
            POSIX.close(fd)
        }
        logger?.trace("closed \(peerDescription)")
    }

    /// Synchronous form of `close()`, for owners that close from non-async code (a tty is released in the background).
    func closeNow() {
        guard let fd = markClosed() else { return }
        Self.release(fd, isTTY: isTTY)
        logger?.trace("closed \(peerDescription)")
    }

    /// Marks the transport closed and fails pending operations; returns the descriptor to release (once).
    private func markClosed() -> Int32? {
        let fd: Int32? = state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            return s.fd
        }
        guard let fd else { return nil }
        // Deregister before closing so the descriptor number can't be observed after reuse.
        reactor.deregister(registration, failing: closedError())
        return fd
    }

    /// Closes `fd` without blocking the caller: ttys are closed on a short-lived dedicated thread.
    private static func release(_ fd: Int32, isTTY: Bool) {
        guard isTTY else {
            POSIX.close(fd)
            return
        }
        do {
            try DedicatedThread.spawn(name: "tuneup-close") { POSIX.close(fd) }
        } catch {
            POSIX.close(fd)
        }
    }

    /// Whether a tty reports a hang-up (zero-timeout poll, never blocks).
    private static func isHungUp(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) >= 0 else { return true }
        return entry.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0
    }

    /// Maps a read/write errno to a `TransportError`.
    static func ioError(_ e: Int32, peer: String, operation: String) -> TransportError {
        switch e {
        case EIO:
            return TransportError(.closed, "\(peer): the other end hung up", errno: e)
        case EPIPE, ECONNRESET, ENOTCONN, ESHUTDOWN:
            return TransportError(.closed, "\(peer): the connection was closed by the peer (\(POSIX.describe(e)))", errno: e)
        case ETIMEDOUT:
            return TransportError(.timedOut, "\(peer): \(POSIX.describe(e))", errno: e)
        default:
            return TransportError(.io, "\(peer): \(operation) failed: \(POSIX.describe(e))", errno: e)
        }
    }
}
