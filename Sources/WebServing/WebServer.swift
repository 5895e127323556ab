import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle
import Support
import Synchronization

/// A Hummingbird server (HTTP/1.1, WebSocket upgrades on the same router) run in a task of its own: the operator
/// page, the line dashboard and the speaker hub. `start` returns once it listens; `stop` returns once it has closed,
/// whatever its clients do.
///
/// Hummingbird's graceful shutdown alone waits for every client to go away: a connection on which nothing was ever
/// sent (a browser opens spare ones) is not told to close, so one idle client kept a stopped server for minutes. Here
/// stopping closes the listener and then:
/// - a connection on which nothing was received, and an idle keep-alive one, close at once;
/// - a request under way has `grace` to be answered (its connection closes after the answer);
/// - a WebSocket gets a close frame (its route's handler ends when the server's owner lets its clients go, and
///   Hummingbird sends one on shutdown) and has `grace` to answer it before its connection closes; the handlers run
///   through `webSocketHandlers` are given `grace` to end before the shutdown starts, so that the close frame comes
///   after their last message (see `WebSocketHandlers`);
/// - after `grace` every connection that is not a WebSocket is closed, after twice `grace` every one left.
public final class WebServer: Sendable {
    /// The port it listens on (the one chosen for port 0).
    public let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    private let connections: Connections
    private let grace: Duration
    private let webSocketHandlers: WebSocketHandlers?

    private init(port: Int, group: ServiceGroup, task: Task<Void, any Error>, connections: Connections, grace: Duration,
                 webSocketHandlers: WebSocketHandlers?) {
        (self.port, self.group, self.task, self.connections, self.grace) = (port, group, task, connections, grace)
        self.webSocketHandlers = webSocketHandlers
    }

    /// The server ended before it listened (stopped while it started).
    public struct StoppedBeforeListening: Error {}

    /// Serves `router` on `host:port` (0: a free port) and returns once the server listens.
    /// - Parameter webSocketHandlers: what the router's WebSocket routes run their handlers through (see `stop`).
    /// - Throws: the bind's error (`IOError` and the like), or `StoppedBeforeListening`.
    public static func start<Context: WebSocketRequestContext>(
        _ router: Router<Context>, host: String, port: Int, serverName: String, maxFrameSize: Int = 1 << 14,
        grace: Duration = .milliseconds(500), webSocketHandlers: WebSocketHandlers? = nil, logger: Logger
    ) async throws -> WebServer {
        let connections = Connections()
        let webSocketResponder = router.buildResponder()
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            ws: .init(maxFrameSize: maxFrameSize, closeTimeout: grace))
        let server = HTTPServerBuilder { responder in
            Tracked(base: HTTP1WebSocketUpgradeChannel(
                responder: responder, webSocketResponder: webSocketResponder, configuration: configuration), connections: connections)
        }
        let (events, sink) = AsyncStream<Result<Int, any Error>>.makeStream()
        let app = Application(
            router: router, server: server,
            configuration: .init(address: .hostname(host, port: port), serverName: serverName),
            onServerRunning: { channel in sink.yield(.success(channel.localAddress?.port ?? port)) }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let task = Task {
            do {
                try await group.run()
                sink.yield(.failure(StoppedBeforeListening()))
            } catch {
                sink.yield(.failure(error))
                throw error
            }
        }
        for await event in events {
            switch event {
            case let .success(port): return WebServer(port: port, group: group, task: task, connections: connections, grace: grace,
                                                           webSocketHandlers: webSocketHandlers)
            case let .failure(error): throw error
            }
        }
        task.cancel()
        throw CancellationError()
    }

    /// Connections open now (for tests: a client's connection is counted once the server accepted it).
    public var openConnections: Int { connections.count }

    /// Stops serving and returns when the server has closed: at once when no client holds a connection, at most
    /// about twice `grace` later whatever the clients do (see the type's description).
    public func stop() async {
        let (group, task, connections, grace, handlers) = (self.group, self.task, self.connections, self.grace, self.webSocketHandlers)
        // Not in the caller's task: a cancelled caller (Ctrl-C) would cut the grace short, and this must end anyway.
        await Task {
            if let handlers {
                struct Late: Error {}
                _ = try? await withDeadline(grace, late: { Late() }) { await handlers.ended() }
            }
            await group.triggerGracefulShutdown()
            if await Self.ends(task, within: grace) { return }
            connections.close(webSockets: false)
            if await Self.ends(task, within: grace) { return }
            connections.close(webSockets: true)
            task.cancel()
            _ = await task.result
        }.value
    }

    /// Returns when the server ends (an error, or `stop()`).
    public func wait() async throws { try await task.value }

    /// True when `task` ended within `limit`; false when the limit passed first (the task goes on).
    private static func ends(_ task: Task<Void, any Error>, within limit: Duration) async -> Bool {
        struct Late: Error {}
        do {
            try await withDeadline(limit, cancelLate: false, late: { Late() }) { _ = await task.result }
            return true
        } catch {
            return false
        }
    }
}

/// The server's open connections, to close those left when the grace is over.
final class Connections: Sendable {
    private let open = Mutex<[ObjectIdentifier: any Channel]>([:])

    var count: Int { open.withLock { $0.count } }

    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        open.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { [self] _ in _ = open.withLock { $0.removeValue(forKey: id) } }
    }

    /// Closes every connection, or every one but the WebSockets (their close handshake has its own bound).
    func close(webSockets: Bool) {
        for channel in open.withLock({ Array($0.values) }) {
            channel.eventLoop.execute {
                if !webSockets, (try? channel.pipeline.syncOperations.handler(type: WebSocketFrameEncoder.self)) != nil { return }
                // The input first: a connection still waiting for its first request then ends as if the client had
                // gone (Hummingbird logs an error for one closed under its HTTP upgrade handler).
                channel.close(mode: .input, promise: nil)
                channel.close(promise: nil)
            }
        }
    }
}

/// A child channel of the server with its connection registered, and closed at once when the server stops before
/// anything was received on it (Hummingbird's HTTP/1 handlers only close a connection between requests, which one
/// that never sent a request has not reached: it would hold the server until the client goes away).
struct Tracked<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let connections: Connections

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        connections.add(channel)
        do {
            try channel.pipeline.syncOperations.addHandler(CloseUnusedOnQuiesce())
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// First in a connection's pipeline: the server's quiesce event (it stops) closes a connection on which nothing was
/// received; any other goes on to Hummingbird's handlers.
final class CloseUnusedOnQuiesce: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private var received = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received = true
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !received {
            // Closing the input ends the connection as the client's going away would (the HTTP upgrade handler
            // waiting for a first request then closes it); a plain close would be logged as an error.
            context.close(mode: .input, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}

@available(*, unavailable)
extension CloseUnusedOnQuiesce: Sendable {}
