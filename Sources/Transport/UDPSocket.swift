import CShims
import Glibc
import Synchronization

/// One datagram received by a `UDPSocket`, with its sender.
public struct UDPDatagram: Sendable, Hashable {
    public var bytes: [UInt8]
    /// The sender's numeric host (`127.0.0.1`) and port.
    public var host: String
    public var port: UInt16
    /// When the kernel received it, CLOCK_MONOTONIC ns (`SO_TIMESTAMPNS`, converted from CLOCK_REALTIME by
    /// `KernelTimestamp`): on a socket bound with `receiveTimestamps`; nil otherwise, or when the kernel gave none.
    public var receivedAt: UInt64?

    public init(bytes: [UInt8], host: String, port: UInt16, receivedAt: UInt64? = nil) {
        self.bytes = bytes
        self.host = host
        self.port = port
        self.receivedAt = receivedAt
    }
}

/// The kernel's receive timestamps (`SO_TIMESTAMPNS`) are on CLOCK_REALTIME; timelines here are on CLOCK_MONOTONIC.
/// Both advance at the same rate (NTP's frequency slewing applies to both), so they differ by a constant that changes
/// only when the real-time clock is stepped (settimeofday, an NTP step): it is measured again for every conversion.
public enum KernelTimestamp {
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, ns: each of `tries` brackets a REALTIME read between two MONOTONIC
    /// reads, and the narrowest bracket's middle is kept (a bracket widened by preemption loses to the others).
    public static func realtimeMinusMonotonic(tries: Int = 3) -> Int64 {
        var best: (width: Int64, offset: Int64) = (.max, 0)
        for _ in 0..<max(1, tries) {
            let m1 = read(CLOCK_MONOTONIC), r = read(CLOCK_REALTIME), m2 = read(CLOCK_MONOTONIC)
            let width = m2 &- m1
            if width < best.width { best = (width, r &- (m1 &+ width / 2)) }
        }
        return best.offset
    }

    /// A CLOCK_REALTIME time (`sec`, `nsec`) as CLOCK_MONOTONIC ns.
    public static func monotonic(realtimeSeconds sec: Int64, nanoseconds nsec: Int64) -> UInt64 {
        let realtime = sec &* 1_000_000_000 &+ nsec
        return UInt64(bitPattern: realtime &- realtimeMinusMonotonic())
    }

    private static func read(_ clock: clockid_t) -> Int64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }
}

/// A non-blocking IPv4/IPv6 UDP socket for datagram protocols (speaker discovery), waiting on the I/O reactor: no
/// call blocks a thread of the cooperative pool.
///
/// Contract: hosts are numeric (no name lookup). `receive()` and `send` suspend on the reactor when the socket would
/// block, are cancellable (`CancellationError`), and throw `TransportError(.closed)` after `close()`; one receive may
/// be pending at a time. Datagrams above `maxDatagramSize` are truncated by the kernel (callers' decoders refuse them).
/// `close()` is idempotent.
public final class UDPSocket: Sendable {
    /// The largest datagram `receive()` returns whole.
    public static let maxDatagramSize = 65_507

    private let fd: Mutex<Int32?>
    /// Datagrams come with the kernel's receive time (`UDPDatagram.receivedAt`).
    public let receiveTimestamps: Bool
    private let reactor: IOReactor
    private let registration: IOReactor.Registration
    /// The port bound.
    public let localPort: UInt16
    /// The host bound (numeric).
    public let localHost: String

    private init(fd: Int32, reactor: IOReactor, registration: IOReactor.Registration, host: String, port: UInt16,
                 receiveTimestamps: Bool) {
        self.fd = Mutex(fd)
        self.receiveTimestamps = receiveTimestamps
        self.reactor = reactor
        self.registration = registration
        self.localHost = host
        self.localPort = port
    }

    deinit { close() }

    /// Binds a UDP socket to `host:port` (port 0: any free port).
    ///
    /// - Parameters:
    ///   - broadcast: allow sending to broadcast addresses (`SO_BROADCAST`).
    ///   - reuseAddress: let several sockets bind the same port (`SO_REUSEADDR`, `SO_REUSEPORT`), as speakers sharing
    ///     a host share the discovery port.
    ///   - receiveTimestamps: `receive()` gives each datagram the kernel's receive time (`SO_TIMESTAMPNS`,
    ///     `UDPDatagram.receivedAt`): when it arrived, however late this process reads it (clock sync). (The first
    ///     timestamping socket of the system makes the kernel turn stamping on in the background; until it is on —
    ///     microseconds to milliseconds — a datagram is stamped when it is read.)
    /// - Throws: `TransportError` — `.invalidAddress` for a host that is not a numeric address, `.busy` when the port is
    ///   taken, `.permissionDenied`, `.io`.
    public static func bind(host: String = "0.0.0.0", port: UInt16 = 0, broadcast: Bool = false,
                            reuseAddress: Bool = false, receiveTimestamps: Bool = false) throws(TransportError) -> UDPSocket {
        let context = "cannot bind UDP \(host):\(port)"
        guard let address = SocketAddress(numericHost: host, port: port) else {
            throw TransportError(.invalidAddress, "\(context): '\(host)' is not a numeric IPv4 or IPv6 address")
        }
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(address.family, type, Int32(IPPROTO_UDP))
        guard fd >= 0 else {
            let e = errno
            throw TransportError(.io, "\(context): cannot create a socket: \(POSIX.describe(e))", errno: e)
        }
        var one: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        if broadcast { _ = setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, size) }
        if reuseAddress {
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, size)
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, size)
        }
        if receiveTimestamps, tuneup_enable_receive_timestamps(fd) != 0 {
            let e = errno
            POSIX.close(fd)
            throw TransportError(.io, "\(context): cannot ask for receive timestamps: \(POSIX.describe(e))", errno: e)
        }
        guard address.withSockaddr({ Glibc.bind(fd, $0, $1) }) == 0 else {
            let e = errno
            POSIX.close(fd)
            throw TransportError.bindFailed(e, context: context)
        }
        let bound = SocketAddress.local(of: fd)
        do {
            let reactor = try IOReactor.shared()
            let registration = try reactor.register(fd)
            return UDPSocket(fd: fd, reactor: reactor, registration: registration, host: bound?.host ?? host, port: bound?.port ?? port,
                             receiveTimestamps: receiveTimestamps)
        } catch {
            POSIX.close(fd)
            throw error
        }
    }

    /// Joins an IPv4 multicast group on any interface; false when the system refuses (no multicast route).
    @discardableResult
    public func joinMulticastGroup(_ group: String) -> Bool {
        joinMulticastGroup(group, interface: "0.0.0.0")
    }

    /// Joins an IPv4 multicast group on the interface with IPv4 address `interface` ("127.0.0.1": the loopback, so
    /// every socket of the host that joined it there gets what one of them sends to it); false when refused.
    @discardableResult
    public func joinMulticastGroup(_ group: String, interface: String) -> Bool {
        var request = ip_mreq()
        guard inet_pton(AF_INET, group, &request.imr_multiaddr) == 1, inet_pton(AF_INET, interface, &request.imr_interface) == 1 else {
            return false
        }
        return fd.withLock { fd in
            guard let fd else { return false }
            return setsockopt(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreq>.size)) == 0
        }
    }

    /// Sends this socket's multicast datagrams out of the interface with IPv4 address `interface`, to this host's
    /// members too, with `ttl` (0: they never leave the host); false when refused.
    @discardableResult
    public func setMulticastInterface(_ interface: String, ttl: UInt8 = 0) -> Bool {
        var address = in_addr()
        guard inet_pton(AF_INET, interface, &address) == 1 else { return false }
        var loop: UInt8 = 1
        var hops = ttl
        return fd.withLock { fd in
            guard let fd else { return false }
            return setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &address, socklen_t(MemoryLayout<in_addr>.size)) == 0
                && setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, &loop, 1) == 0
                && setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &hops, 1) == 0
        }
    }

    private var closedError: TransportError { TransportError(.closed, "the UDP socket on port \(localPort) is closed") }

    /// Sends one datagram to `host:port` (numeric host).
    /// - Throws: `TransportError` (`.invalidAddress`, `.closed`, `.io` with the system's reason), `CancellationError`.
    public func send(_ bytes: [UInt8], toHost host: String, port: UInt16) async throws {
        guard let address = SocketAddress(numericHost: host, port: port) else {
            throw TransportError(.invalidAddress, "'\(host)' is not a numeric IPv4 or IPv6 address")
        }
        while true {
            try Task.checkCancellation()
            let result: (Int, Int32)? = fd.withLock { fd in
                guard let fd else { return nil }
                let n = bytes.withUnsafeBytes { raw in
                    address.withSockaddr { sendto(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), $0, $1) }
                }
                return (n, n < 0 ? errno : 0)
            }
            guard let (n, e) = result else { throw closedError }
            if n >= 0 { return }
            switch e {
            case EAGAIN, EWOULDBLOCK: try await reactor.wait(.writable, on: registration)
            case EINTR: continue
            default: throw TransportError(.io, "cannot send a UDP datagram to \(host):\(port): \(POSIX.describe(e))", errno: e)
            }
        }
    }

    /// Sends one datagram now if the socket takes it, without waiting: false when it would block (a full send buffer:
    /// nothing was sent). `bytes` is called just before the send, after the address is parsed and with the socket
    /// held, so a time it writes into the datagram (clock sync's t1 and t3) is read as close to the send as this
    /// process can.
    /// - Throws: `TransportError` (`.invalidAddress`, `.closed`, `.io` with the system's reason).
    public func trySend(toHost host: String, port: UInt16, _ bytes: () -> [UInt8]) throws(TransportError) -> Bool {
        guard let address = SocketAddress(numericHost: host, port: port) else {
            throw TransportError(.invalidAddress, "'\(host)' is not a numeric IPv4 or IPv6 address")
        }
        while true {
            let result: (Int, Int32)? = fd.withLock { fd in
                guard let fd else { return nil }
                let datagram = bytes()
                let n = datagram.withUnsafeBytes { raw in
                    address.withSockaddr { sendto(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), $0, $1) }
                }
                return (n, n < 0 ? errno : 0)
            }
            guard let (n, e) = result else { throw closedError }
            if n >= 0 { return true }
            switch e {
            case EAGAIN, EWOULDBLOCK: return false
            case EINTR: continue
            default: throw TransportError(.io, "cannot send a UDP datagram to \(host):\(port): \(POSIX.describe(e))", errno: e)
            }
        }
    }

    /// The next datagram (with the kernel's receive time on a socket bound with `receiveTimestamps`).
    /// - Throws: `TransportError(.closed)` after `close()`, `.io`; `CancellationError`.
    public func receive() async throws -> UDPDatagram {
        var buffer = [UInt8](repeating: 0, count: Self.maxDatagramSize)
        while true {
            try Task.checkCancellation()
            if let datagram = try receiveNow(into: &buffer) { return datagram }
            try await reactor.wait(.readable, on: registration)
        }
    }

    /// Calls `handler` with every datagram as it arrives (with the kernel's receive time on a socket bound with
    /// `receiveTimestamps`), on the I/O reactor's thread, until the socket is closed: no task and no thread hand-off
    /// per datagram (a task woken per clock-sync request was a tenth of a receiver's CPU). The handler must be short
    /// and never block: it answers a request with a non-blocking send, say. A socket that fails for good stops calling.
    /// - Throws: `TransportError(.closed)` after `close()`, `.io` when somebody already waits to receive.
    public func handleDatagrams(_ handler: @escaping @Sendable (UDPDatagram) -> Void) throws(TransportError) {
        let buffer = ReceiveBuffer()
        try reactor.notify(.readable, on: registration) { [weak self] in self?.drain(handler, into: buffer) }
    }

    /// `handleDatagrams`' receive buffer, made once (not 64 KiB allocated and zeroed at every readiness); only the
    /// reactor's thread uses it, one readiness at a time.
    private final class ReceiveBuffer: Sendable {
        let bytes = Mutex([UInt8](repeating: 0, count: UDPSocket.maxDatagramSize))
    }

    /// Hands every waiting datagram to `handler`, then waits on the reactor for more (`handleDatagrams`).
    private func drain(_ handler: @escaping @Sendable (UDPDatagram) -> Void, into buffer: ReceiveBuffer) {
        do {
            while let datagram = try buffer.bytes.withLock({ bytes throws(TransportError) in try receiveNow(into: &bytes) }) {
                handler(datagram)
            }
            try reactor.notify(.readable, on: registration) { [weak self] in self?.drain(handler, into: buffer) }
        } catch {
            return  // closed, or failed for good: nothing more comes
        }
    }

    /// The next datagram if one is waiting (nil: none, never waits).
    private func receiveNow(into buffer: inout [UInt8]) throws(TransportError) -> UDPDatagram? {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            var seconds: Int64 = -1, nanoseconds: Int64 = -1
            let timestamps = receiveTimestamps
            let result: (Int, Int32)? = withUnsafeMutableBytes(of: &storage) { raw in
                fd.withLock { fd in
                    guard let fd else { return nil }
                    let n = buffer.withUnsafeMutableBytes { b in
                        timestamps
                            ? tuneup_recv_timestamped(fd, b.baseAddress, b.count, 0, raw.baseAddress, &length, &seconds, &nanoseconds)
                            : recvfrom(fd, b.baseAddress, b.count, 0, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
                    }
                    return (n, n < 0 ? errno : 0)
                }
            }
            guard let (n, e) = result else { throw closedError }
            if n >= 0 {
                let received = seconds >= 0 ? KernelTimestamp.monotonic(realtimeSeconds: seconds, nanoseconds: nanoseconds) : nil
                let peer = withUnsafeBytes(of: &storage) { SocketAddress($0.baseAddress!, length: Int(length)) }
                return UDPDatagram(bytes: Array(buffer[0..<n]), host: peer?.host ?? "?", port: peer?.port ?? 0, receivedAt: received)
            }
            switch e {
            case EAGAIN, EWOULDBLOCK: return nil
            case EINTR, ECONNREFUSED: continue  // an ICMP error from an earlier send; not this socket's end
            default: throw TransportError(.io, "cannot receive a UDP datagram on port \(localPort): \(POSIX.describe(e))", errno: e)
            }
        }
    }

    /// The next datagram's bytes if one is waiting, nil if none is: never waits. For a thread of its own that reads
    /// the socket at its own pace (a sound card's writer drains it before each write) instead of a task woken for
    /// every datagram. `scratch` is the caller's receive buffer, kept between calls (grown to `maxDatagramSize`).
    /// - Throws: `TransportError(.closed)` after `close()`, `.io`.
    public func receiveIfReady(scratch: inout [UInt8]) throws(TransportError) -> [UInt8]? {
        if scratch.count < Self.maxDatagramSize { scratch = [UInt8](repeating: 0, count: Self.maxDatagramSize) }
        while true {
            let result: (Int, Int32)? = fd.withLock { fd in
                guard let fd else { return nil }
                let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                return (n, n < 0 ? errno : 0)
            }
            guard let (n, e) = result else { throw closedError }
            if n >= 0 { return Array(scratch[0..<n]) }
            switch e {
            case EAGAIN, EWOULDBLOCK: return nil
            case EINTR, ECONNREFUSED: continue  // as in receive()
            default: throw TransportError(.io, "cannot receive a UDP datagram on port \(localPort): \(POSIX.describe(e))", errno: e)
            }
        }
    }

    /// Releases the socket; pending and later calls throw `.closed`. Idempotent.
    public func close() {
        let old: Int32? = fd.withLock { fd in
            defer { fd = nil }
            return fd
        }
        guard let old else { return }
        reactor.deregister(registration, failing: closedError)
        POSIX.close(old)
    }
}
