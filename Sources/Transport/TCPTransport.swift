import Glibc
import Logging
import Support

/// TCP client connections.
///
/// Connections are `FileDescriptorTransport`s over non-blocking sockets with `TCP_NODELAY` on (protocol packets are
/// small and latency-sensitive). Their `peerDescription` is the address as requested, e.g. `tcp:localhost:4000`.
public enum TCPTransport {
    /// Connects to `host:port`.
    ///
    /// Numeric hosts are used directly; names are resolved with `getaddrinfo` on a dedicated thread (it blocks), and
    /// every resolved address is tried in order. Each connect is non-blocking and completes on the I/O reactor.
    /// `timeout` covers resolution and connecting together.
    ///
    /// - Throws: `TransportError` with a one-line message such as "cannot connect to tcp:127.0.0.1:9: connection
    ///   refused" — `.connectionRefused`, `.notFound` (unknown host), `.timedOut`, `.permissionDenied` or `.io` —
    ///   or `CancellationError`.
    public static func connect(
        host: String, port: UInt16, timeout: Duration = .seconds(5), logger: Logger? = nil
    ) async throws -> any Transport {
        let display = DeviceAddress.tcp(host: host, port: port).description
        return try await withDeadline(
            timeout,
            late: { TransportError(.timedOut, "cannot connect to \(display): timed out after \(timeout.shortDescription)") },
            discard: { transport in await transport.close() }
        ) {
            let addresses: [SocketAddress]
            switch try await SocketAddress.resolve(host: host, port: port, passive: false) {
            case .success(let found): addresses = found
            case .failure(let failure): throw resolutionError(failure, host: host, context: "cannot connect to \(display)")
            }
            var lastError = TransportError(.notFound, "cannot connect to \(display): '\(host)' has no IPv4 or IPv6 address")
            for address in addresses {
                do {
                    return try await connect(to: address, display: display, logger: logger)
                } catch let error as TransportError {
                    lastError = error
                }
            }
            throw lastError
        }
    }

    /// One non-blocking connect attempt.
    static func connect(to address: SocketAddress, display: String, logger: Logger?) async throws -> any Transport {
        let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(address.family, socketType, Int32(IPPROTO_TCP))
        guard fd >= 0 else {
            let e = errno
            throw TransportError(.io, "cannot connect to \(display): cannot create a socket: \(POSIX.describe(e))", errno: e)
        }
        var handedOver = false
        defer { if !handedOver { POSIX.close(fd) } }

        if address.withSockaddr({ Glibc.connect(fd, $0, $1) }) != 0 {
            let e = errno
            guard e == EINPROGRESS || e == EINTR else { throw connectError(e, display: display) }
            let reactor = try IOReactor.shared()
            let registration = try reactor.register(fd)
            do {
                try await reactor.wait(.writable, on: registration)
                reactor.deregister(registration, failing: CancellationError())
            } catch {
                reactor.deregister(registration, failing: CancellationError())
                throw error
            }
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length) != 0 { pending = errno }
            if pending != 0 { throw connectError(pending, display: display) }
        }
        setNoDelay(fd)
        handedOver = true
        return try FileDescriptorTransport(adopting: fd, peerDescription: display, logger: logger)
    }

    /// Turns Nagle's algorithm off.
    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Maps a connect errno to a `TransportError` with the message "cannot connect to ADDRESS: REASON".
    static func connectError(_ e: Int32, display: String) -> TransportError {
        let message = "cannot connect to \(display): \(POSIX.describe(e))"
        switch e {
        case ECONNREFUSED: return TransportError(.connectionRefused, message, errno: e)
        case ETIMEDOUT: return TransportError(.timedOut, message, errno: e)
        case EACCES, EPERM: return TransportError(.permissionDenied, message, errno: e)
        default: return TransportError(.io, message, errno: e)
        }
    }

    /// Maps a name-resolution failure: unknown names are `.notFound`, resource problems `.io`.
    static func resolutionError(_ failure: SocketAddress.ResolutionFailure, host: String, context: String) -> TransportError {
        switch failure.code {
        case EAI_MEMORY, EAI_SYSTEM:
            return TransportError(.io, "\(context): cannot resolve '\(host)': \(failure.message)", errno: failure.errno)
        case EAI_AGAIN:
            return TransportError(.notFound, "\(context): cannot resolve '\(host)' right now (\(failure.message))")
        default:
            return TransportError(.notFound, "\(context): unknown host '\(host)'")
        }
    }
}
