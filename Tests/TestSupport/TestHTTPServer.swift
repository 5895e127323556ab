import Transport

/// A small HTTP/1.1 server on loopback (the repo's `TCPListener`) with one answer per path.
public final class TestHTTPServer: Sendable {
    public enum Answer: Sendable {
        /// 200 with the body; `length` false sends no Content-Length and ends the body by closing.
        case body([UInt8], type: String, length: Bool)
        case status(Int, String)
        /// The headers and `prefix` bytes of a body, then nothing until the server stops.
        case stall(prefix: [UInt8], type: String)
        /// The headers (with a Content-Length of `announced` bytes when given) and `prefix` bytes of a body, then the
        /// connection closes: a transfer cut short.
        case cut(prefix: [UInt8], type: String, announced: Int?)
    }

    public let listener: TCPListener
    public let port: UInt16
    private let task: Task<Void, Never>

    public init(_ routes: [String: Answer]) async throws {
        listener = try await TCPListener.bind()
        guard case .tcp(_, let port) = listener.boundAddress else { throw TestFailure("not a TCP address") }
        self.port = port
        let listener = self.listener
        task = Task {
            await withTaskGroup(of: Void.self) { group in
                while let link = try? await listener.accept() {
                    group.addTask { await Self.serve(link, routes) }
                }
                group.cancelAll()
            }
        }
    }

    /// `http://127.0.0.1:PORT/PATH`.
    public func address(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    public func stop() async {
        listener.close()
        task.cancel()
        await task.value
    }

    private static func serve(_ link: any Transport, _ routes: [String: Answer]) async {
        defer { Task { await link.close() } }
        var request: [UInt8] = []
        while !request.ends(with: Array("\r\n\r\n".utf8)) {
            guard let bytes = try? await link.receive(), !bytes.isEmpty else { return }
            request += bytes
        }
        let line = String(decoding: request.prefix(while: { $0 != 0x0D }), as: UTF8.self)
        let path = line.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        func send(_ bytes: [UInt8]) async -> Bool {
            var offset = 0
            while offset < bytes.count {
                // An odd size that no sample or frame divides: the decoder's reads straddle what has arrived.
                let end = min(bytes.count, offset + 4093)
                guard (try? await link.send(Array(bytes[offset..<end]))) != nil else { return false }
                offset = end
            }
            return true
        }
        switch routes[path] ?? .status(404, "Not Found") {
        case .body(let body, let type, let length):
            var head = "HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nConnection: close\r\n"
            if length { head += "Content-Length: \(body.count)\r\n" }
            _ = await send(Array((head + "\r\n").utf8) + body)
        case .status(let code, let reason):
            let body = "<html><body>\(code) \(reason)</body></html>"
            _ = await send(Array("HTTP/1.1 \(code) \(reason)\r\nContent-Type: text/html\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8))
        case .stall(let prefix, let type):
            _ = await send(Array("HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nConnection: close\r\n\r\n".utf8) + prefix)
            try? await Task.sleep(for: .seconds(3600))
        case .cut(let prefix, let type, let announced):
            var head = "HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nConnection: close\r\n"
            if let announced { head += "Content-Length: \(announced)\r\n" }
            _ = await send(Array((head + "\r\n").utf8) + prefix)
        }
    }
}

fileprivate extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}

