import Glibc
import SpeakerHubCore
import Support
import Synchronization
import Transport

/// Snapcast's control over raw TCP (docs/hub.md §9): newline-delimited JSON-RPC 2.0, one request, notification or
/// batch a line, answered with a line ending in CRLF as snapserver's (the Python `snapcast` client reads up to a
/// CRLF); the hub's Snapcast notifications (`Snapcast.notifications`) are pushed on each connection. Every line goes
/// to `HubAPI.rpc`, the dispatcher of `/jsonrpc` too. A thin shell: the listener and the sockets (non-blocking, on
/// the I/O reactor).
public final class SnapcastControlServer: Sendable {
    /// Snapcast's control port.
    public static let defaultPort = 1705
    /// A line longer than this without its newline closes the connection (one over `HubAPI.rpcMaxMessage` is
    /// answered with an invalid-request error).
    public static let maxLine = 1 << 20

    public let host: String
    public let port: Int
    private let listener: TCPListener
    private let task: Mutex<Task<Void, Never>?>

    private init(host: String, listener: TCPListener) {
        self.host = host
        self.listener = listener
        if case let .tcp(_, port) = listener.boundAddress { self.port = Int(port) } else { self.port = 0 }
        self.task = Mutex(nil)
    }

    /// Listens on `host:port` (0: a free port) and serves until `stop()`.
    /// - Throws: `HubError(.cannotServe)` saying why the port cannot be listened on (in use, privileged).
    public static func start(_ api: HubAPI, host: String, port: Int) async throws -> SnapcastControlServer {
        let listener: TCPListener
        do {
            listener = try await TCPListener.bind(host: host, port: UInt16(port))
        } catch let error as TransportError {
            let why = error.code == .busy ? "the port is in use (a snapserver?)" : error.message
            throw HubError(.cannotServe, "cannot serve Snapcast's control on \(host):\(port): \(why)")
        }
        let server = SnapcastControlServer(host: host, listener: listener)
        server.task.withLock { $0 = Task { await server.acceptAll(api) } }
        return server
    }

    /// The hub's control port as `tuneup speaker hub --control-port` asks: `port` explicitly (0: a free one), whose
    /// failure is the caller's error; or nil, Snapcast's 1705 when it is free — when it is not (a snapserver runs
    /// there), no TCP control and a one-line warning saying so (the hub serves HTTP as ever).
    public static func start(_ api: HubAPI, host: String, requested port: Int?) async throws -> (server: SnapcastControlServer?, warning: String?) {
        if let port { return (try await start(api, host: host, port: port), nil) }
        do {
            return (try await start(api, host: host, port: defaultPort), nil)
        } catch let error as HubError {
            return (nil, error.message + "; the hub serves no Snapcast TCP control (--control-port N serves it on another port)")
        }
    }

    /// This machine as Snapcast's `server.host`: its host name, system and architecture (uname; no file is read).
    public static func thisHost() -> Snapcast.Host {
        var buffer = [CChar](repeating: 0, count: 256)
        let name = gethostname(&buffer, buffer.count) == 0 ? String(cString: buffer) : Snapcast.Host.unnamed.name
        var u = utsname()
        guard uname(&u) == 0 else { return Snapcast.Host(name: name, os: "", arch: "") }
        func text<T>(_ field: T) -> String {
            withUnsafeBytes(of: field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        return Snapcast.Host(name: name, os: text(u.sysname), arch: text(u.machine))
    }

    /// Stops listening and closes every connection.
    public func stop() async {
        listener.close()
        let t = task.withLock { t in defer { t = nil }; return t }
        t?.cancel()
        await t?.value
    }

    func acceptAll(_ api: HubAPI) async {
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                guard let link = try? await listener.accept() else { break }
                group.addTask { await Self.serve(api, link) }
            }
            group.cancelAll()
        }
    }

    /// The client's address without its port (`tcp:HOST:PORT`): sessions are bounded per client address.
    static func clientAddress(_ description: String) -> String {
        var text = Substring(description)
        if text.hasPrefix("tcp:") { text = text.dropFirst(4) }
        if let colon = text.lastIndex(of: ":") { text = text[..<colon] }
        return String(text)
    }

    /// One connection: its lines answered in order, the hub's Snapcast notifications pushed as they come, until it
    /// closes, the server stops, or it takes nothing for `stalled` (then it is dropped: nothing waits for it).
    static func serve(_ api: HubAPI, _ link: any Transport, stalled: Duration = .seconds(10)) async {
        let peer = HubRPCPeer(client: clientAddress(link.peerDescription))
        let (id, wakeups) = api.events.subscribe(peer: peer.key)
        let writes = AsyncLock()
        @Sendable func write(_ text: String) async throws {
            let bytes = Array((text + "\r\n").utf8)
            try await writes.withLock {
                try await withDeadline(stalled, late: { HubError(.cannotServe, "a Snapcast control client took nothing for \(stalled)") }) {
                    try await link.send(bytes)
                }
            }
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var buffer: [UInt8] = []
                while true {
                    guard let chunk = try? await link.receive() else { return }
                    buffer += chunk
                    while let newline = buffer.firstIndex(of: 10) {
                        var line = buffer[..<newline]
                        if line.last == 13 { line = line.dropLast() }
                        let text = Array(line)
                        buffer.removeSubrange(...newline)
                        guard text.contains(where: { $0 != 32 && $0 != 9 && $0 != 13 }) else { continue }
                        if let answer = await api.rpc(text, peer: peer) {
                            do { try await write(answer) } catch { return }
                        }
                    }
                    if buffer.count > maxLine { return }
                }
            }
            group.addTask {
                for await _ in wakeups {
                    guard let queued = api.events.take(id) else { return }
                    for n in queued where Snapcast.notifications.contains(n.method) {
                        do { try await write(n.text) } catch { return }
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
        api.events.unsubscribe(id)
        await api.close(peer)
        await link.close()
    }
}
