import Glibc
import Synchronization

/// A plain TCP client of a loopback server, for the tests of how a server lets its clients go when it stops: it sends
/// only what it is told (an idle connection, a keep-alive one after one request, a WebSocket that never answers) and
/// tells the server's end of the connection (EOF) from a reset. Its blocking calls run off the pool; every read waits
/// at most `within` seconds (a hang guard: generous).
public final class IdleClient: Sendable {
    private let fd: Int32
    /// Bytes received and not yet taken by a read.
    private let pending = Mutex<[UInt8]>([])

    private init(fd: Int32) { self.fd = fd }

    deinit { Glibc.close(fd) }

    /// Connects to 127.0.0.1:`port`.
    public static func connect(port: Int) async throws -> IdleClient {
        try await offThePool {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                Glibc.close(fd)
                throw TestFailure("connect to \(port): errno \(errno)")
            }
            return IdleClient(fd: fd)
        }
    }

    public func send(_ text: String) async throws {
        let bytes = Array(text.utf8)
        try await offThePool { [fd] in
            var sent = 0
            while sent < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { throw TestFailure("send: errno \(errno)") }
                sent += n
            }
        }
    }

    /// One HTTP/1.1 request on a connection kept alive, and its whole answer: the status line and headers, the body
    /// (its Content-Length).
    public func request(_ path: String, within seconds: Double = 20) async throws -> (head: String, body: [UInt8]) {
        try await send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let head = try await readHead(within: seconds)
        let length = head.split(separator: "\r\n").compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].filter { !$0.isWhitespace })
        }.first ?? 0
        return (head, try await read(count: length, within: seconds))
    }

    /// Opens a WebSocket on `path` (the upgrade request) and returns the server's answer's head (101).
    public func openWebSocket(_ path: String, within seconds: Double = 20) async throws -> String {
        try await send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let head = try await readHead(within: seconds)
        guard head.hasPrefix("HTTP/1.1 101") else { throw TestFailure("no WebSocket on \(path): \(head)") }
        return head
    }

    /// Everything received until the server closed the connection (EOF), after what earlier reads took. Throws when
    /// the connection is still open after `within` seconds, or was reset (unless `resetIsAnEnd`: a server that closes
    /// a connection with bytes it did not read yet resets it).
    public func readToEnd(within seconds: Double = 20, resetIsAnEnd: Bool = false) async throws -> [UInt8] {
        var all = pending.withLock { p in defer { p = [] }; return p }
        while let more = try await receive(within: seconds, resetIsAnEnd: resetIsAnEnd) { all += more }
        return all
    }

    /// Up to `"\r\n\r\n"`.
    private func readHead(within seconds: Double) async throws -> String {
        while true {
            let head = pending.withLock { p -> String? in
                guard let end = p.indices.dropLast(3).first(where: { p[$0] == 13 && p[$0 + 1] == 10 && p[$0 + 2] == 13 && p[$0 + 3] == 10 })
                else { return nil }
                defer { p.removeFirst(end + 4) }
                return String(decoding: p[..<end], as: UTF8.self)
            }
            if let head { return head }
            guard let more = try await receive(within: seconds) else { throw TestFailure("the connection closed before an HTTP head") }
            pending.withLock { $0 += more }
        }
    }

    private func read(count: Int, within seconds: Double) async throws -> [UInt8] {
        while pending.withLock({ $0.count }) < count {
            guard let more = try await receive(within: seconds) else { throw TestFailure("the connection closed before \(count) bytes") }
            pending.withLock { $0 += more }
        }
        return pending.withLock { p in defer { p.removeFirst(count) }; return Array(p.prefix(count)) }
    }

    /// The next bytes received, nil at EOF.
    private func receive(within seconds: Double, resetIsAnEnd: Bool = false) async throws -> [UInt8]? {
        try await offThePool { [fd] in
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(seconds * 1000))
            guard ready > 0 else { throw TestFailure("the server neither sent nor closed within \(seconds) s") }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 || (n < 0 && errno == ECONNRESET && resetIsAnEnd) { return nil }
            guard n > 0 else { throw TestFailure("the connection was reset (errno \(errno)), not closed") }
            return Array(buffer[..<n])
        }
    }
}

extension IdleClient {
    /// GET `path` from 127.0.0.1:`port` on a connection of its own (`Connection: close`): the answer's status and
    /// body, read until the server closes. Throws when nothing listens on `port`.
    public static func get(port: Int, path: String, within seconds: Double = 20) async throws -> (status: Int, body: String) {
        let client = try await connect(port: port)
        try await client.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let text = String(decoding: try await client.readToEnd(within: seconds, resetIsAnEnd: true), as: UTF8.self)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n"))
    }
}

/// The frames in bytes a WebSocket server sent (unmasked): each one's opcode (1 text, 8 close, ...) and payload.
public func webSocketFrames(_ bytes: [UInt8]) throws -> [(opcode: UInt8, payload: [UInt8])] {
    var frames: [(opcode: UInt8, payload: [UInt8])] = []
    var i = 0
    while i < bytes.count {
        guard i + 2 <= bytes.count else { throw TestFailure("a WebSocket frame cut short") }
        let opcode = bytes[i] & 0x0F
        var length = Int(bytes[i + 1] & 0x7F)
        i += 2
        if length == 126 || length == 127 {
            let size = length == 126 ? 2 : 8
            guard i + size <= bytes.count else { throw TestFailure("a WebSocket frame cut short") }
            length = bytes[i..<(i + size)].reduce(0) { $0 << 8 | Int($1) }
            i += size
        }
        guard i + length <= bytes.count else { throw TestFailure("a WebSocket frame cut short") }
        frames.append((opcode, Array(bytes[i..<(i + length)])))
        i += length
    }
    return frames
}
