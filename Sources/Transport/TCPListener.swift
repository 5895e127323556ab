import CShims
import Glibc
import Logging
import Support
import Synchronization

/// A listening TCP socket that accepts connections as `Transport`s (used by the device simulator's TCP server).
///
/// Contract: `bind` creates the socket with `SO_REUSEADDR`; port 0 picks a free port, reported by `boundAddress`.
/// `accept()` suspends on the I/O reactor (never blocking a thread), is cancellable, and can be called from several
/// tasks (callers are served in FIFO order). Accepted connections have `TCP_NODELAY` on and a `peerDescription` of
/// `tcp:PEERHOST:PEERPORT`. `close()` is idempotent and makes pending and later `accept()` calls throw `.closed`;
/// connections already accepted stay open.
public final class TCPListener: Sendable {
    private struct State {
        var fd: Int32
        var closed = false
    }

    private let state: Mutex<State>
    private let address: DeviceAddress
    private let reactor: IOReactor
    private let registration: IOReactor.Registration
    private let acceptLock = AsyncLock()
    private let logger: Logger?

    /// The address actually bound, with the real port (e.g. `tcp:127.0.0.1:43215`).
    public var boundAddress: DeviceAddress { address }

    private init(fd: Int32, address: DeviceAddress, reactor: IOReactor, registration: IOReactor.Registration, logger: Logger?) {
        self.state = Mutex(State(fd: fd))
        self.address = address
        self.reactor = reactor
        self.registration = registration
        self.logger = logger
    }

    deinit { close() }

    /// Binds and listens on `host:port` (default: loopback, any free port).
    ///
    /// - Throws: `TransportError` — `.busy` when the address is in use, `.permissionDenied` for privileged ports,
    ///   `.notFound` for an unknown host, `.io` otherwise — with a message like
    ///   "cannot listen on tcp:127.0.0.1:80: permission denied".
    public static func bind(host: String = "127.0.0.1", port: UInt16 = 0, backlog: Int32 = 128, logger: Logger? = nil) async throws -> TCPListener {
        let display = DeviceAddress.tcp(host: host, port: port).description
        let context = "cannot listen on \(display)"
        let resolved: SocketAddress
        switch try await SocketAddress.resolve(host: host, port: port, passive: true) {
        case .success(let found):
            guard let first = found.first else {
                throw TransportError(.notFound, "\(context): '\(host)' has no IPv4 or IPv6 address")
            }
            resolved = first
        case .failure(let failure):
            throw TCPTransport.resolutionError(failure, host: host, context: context)
        }
        let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(resolved.family, socketType, Int32(IPPROTO_TCP))
        guard fd >= 0 else {
            let e = errno
            throw TransportError(.io, "\(context): cannot create a socket: \(POSIX.describe(e))", errno: e)
        }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard resolved.withSockaddr({ Glibc.bind(fd, $0, $1) }) == 0, listen(fd, backlog) == 0 else {
            let e = errno
            POSIX.close(fd)
            throw TransportError.bindFailed(e, context: context)
        }
        let bound = SocketAddress.local(of: fd)
        let address = DeviceAddress.tcp(host: bound?.host ?? host, port: bound?.port ?? port)
        do {
            let reactor = try IOReactor.shared()
            let registration = try reactor.register(fd)
            logger?.debug("listening on \(address)")
            return TCPListener(fd: fd, address: address, reactor: reactor, registration: registration, logger: logger)
        } catch {
            POSIX.close(fd)
            throw error
        }
    }

    private var closedError: TransportError {
        TransportError(.closed, "the listener on \(address) is closed")
    }

    /// Waits for the next connection. Throws `.closed` after `close()`, `CancellationError` when cancelled (a
    /// connection that arrives later stays queued for the next `accept()`), `.io` for resource exhaustion.
    public func accept() async throws -> any Transport {
        try await acceptLock.withLock {
            while true {
                try Task.checkCancellation()
                var storage = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let result: (fd: Int32, errno: Int32)? = withUnsafeMutableBytes(of: &storage) { raw in
                    state.withLock { s in
                        guard !s.closed else { return nil }
                        let flags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                        let fd = tuneup_accept4(s.fd, raw.baseAddress, &length, flags)
                        return (fd, fd < 0 ? errno : 0)
                    }
                }
                guard let result else { throw closedError }
                if result.fd >= 0 {
                    let peer = withUnsafeBytes(of: &storage) { SocketAddress($0.baseAddress!, length: Int(length)) }
                    TCPTransport.setNoDelay(result.fd)
                    let description = peer?.description ?? "tcp:unknown"
                    logger?.debug("accepted \(description) on \(address)")
                    return try FileDescriptorTransport(adopting: result.fd, peerDescription: description, logger: logger)
                }
                switch result.errno {
                case EAGAIN, EWOULDBLOCK:
                    try await reactor.wait(.readable, on: registration)
                case EINTR, ECONNABORTED, EPROTO, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH:
                    continue  // the failed connection is gone; accept(2) advises retrying
                default:
                    let e = result.errno
                    throw TransportError(.io, "cannot accept a connection on \(address): \(POSIX.describe(e))", errno: e)
                }
            }
        }
    }

    /// Whether an `accept()` is parked on the reactor waiting for a connection (for tests and diagnostics).
    var hasPendingAccept: Bool {
        reactor.hasWaiter(.readable, on: registration)
    }

    /// Stops listening and releases the socket. Idempotent.
    public func close() {
        let fd: Int32? = state.withLock { s in
            guard !s.closed else { return nil }
            s.closed = true
            return s.fd
        }
        guard let fd else { return }
        reactor.deregister(registration, failing: closedError)
        POSIX.close(fd)
        logger?.debug("stopped listening on \(address)")
    }
}
