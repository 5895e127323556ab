import Glibc
import Support

/// An IPv4 or IPv6 socket address (a copy of a `sockaddr_in`/`sockaddr_in6`), plus name resolution. Internal.
struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The raw `sockaddr` bytes.
    let bytes: [UInt8]

    /// Copies `length` bytes of a socket address; nil for families other than IPv4/IPv6.
    init?(_ address: UnsafeRawPointer, length: Int) {
        guard length >= MemoryLayout<sa_family_t>.size else { return nil }
        let family = Int32(address.loadUnaligned(as: sa_family_t.self))
        switch family {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            bytes = Array(UnsafeRawBufferPointer(start: address, count: MemoryLayout<sockaddr_in>.size))
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            bytes = Array(UnsafeRawBufferPointer(start: address, count: MemoryLayout<sockaddr_in6>.size))
        default:
            return nil
        }
    }

    /// Parses a numeric IPv4 or IPv6 address without any lookup.
    init?(numericHost host: String, port: UInt16) {
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            bytes = withUnsafeBytes(of: v4) { Array($0) }
            return
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            bytes = withUnsafeBytes(of: v6) { Array($0) }
            return
        }
        return nil
    }

    /// AF_INET or AF_INET6.
    var family: Int32 {
        bytes.withUnsafeBytes { Int32($0.loadUnaligned(as: sa_family_t.self)) }
    }

    /// The port in host byte order.
    var port: UInt16 {
        bytes.withUnsafeBytes { raw in
            family == AF_INET
                ? UInt16(bigEndian: raw.loadUnaligned(as: sockaddr_in.self).sin_port)
                : UInt16(bigEndian: raw.loadUnaligned(as: sockaddr_in6.self).sin6_port)
        }
    }

    /// The numeric host (`127.0.0.1`, `::1`).
    var host: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let ok: Bool = bytes.withUnsafeBytes { raw in
            if family == AF_INET {
                var addr = raw.loadUnaligned(as: sockaddr_in.self).sin_addr
                return inet_ntop(AF_INET, &addr, &text, socklen_t(text.count)) != nil
            } else {
                var addr = raw.loadUnaligned(as: sockaddr_in6.self).sin6_addr
                return inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count)) != nil
            }
        }
        guard ok else { return "?" }
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// The address in `DeviceAddress` syntax, e.g. `tcp:127.0.0.1:4000` or `tcp:[::1]:4000`.
    var description: String { DeviceAddress.tcp(host: host, port: port).description }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        bytes.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
    }

    /// The local address a socket is bound to.
    static func local(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutableBytes(of: &storage) { raw -> SocketAddress? in
            guard getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length) == 0 else { return nil }
            return SocketAddress(raw.baseAddress!, length: Int(length))
        }
    }

    /// Why a name could not be resolved: a `getaddrinfo` code (`EAI_*`) and its text.
    struct ResolutionFailure: Error, Sendable {
        let code: Int32
        let message: String
        var errno: Int32?
    }

    /// Resolves `host` for a TCP socket. Numeric hosts are converted directly; names go through `getaddrinfo` on a
    /// dedicated thread (it blocks), so the cooperative pool is never blocked. Cancellable.
    static func resolve(host: String, port: UInt16, passive: Bool) async throws -> Result<[SocketAddress], ResolutionFailure> {
        if let numeric = SocketAddress(numericHost: host, port: port) { return .success([numeric]) }
        return try await Blocking.run("tuneup-resolve") {
            lookUp(host: host, port: port, passive: passive)
        }
    }

    /// Blocking `getaddrinfo`. Call only from a dedicated thread.
    static func lookUp(host: String, port: UInt16, passive: Bool) -> Result<[SocketAddress], ResolutionFailure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0 else {
            let e = errno
            let text = rc == EAI_SYSTEM ? POSIX.describe(e) : String(cString: gai_strerror(rc)).lowercased()
            return .failure(ResolutionFailure(code: rc, message: text, errno: rc == EAI_SYSTEM ? e : nil))
        }
        defer { freeaddrinfo(list) }
        var result: [SocketAddress] = []
        var cursor = list
        while let info = cursor {
            if let addr = info.pointee.ai_addr,
               let address = SocketAddress(addr, length: Int(info.pointee.ai_addrlen)),
               !result.contains(address) {
                result.append(address)
            }
            cursor = info.pointee.ai_next
        }
        return .success(result)
    }
}
