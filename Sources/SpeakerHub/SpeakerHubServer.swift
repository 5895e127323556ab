import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import SpeakerHubCore

/// A request's context on the hub: Hummingbird's core, and the client's address (sessions are bounded per client).
public struct HubRequestContext: RequestContext, RemoteAddressRequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    public let webSocket: WebSocketHandlerReference<Self>

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        webSocket = .init()
    }

    /// The client's IP address (not its port: one browser's connections are one client).
    var client: String { remoteAddress?.ipAddress ?? "" }
}

/// The hub on HTTP (Hummingbird): `GET /v1/NAME?QUERY` answered by `HubAPI`, `GET /` the control page, `/jsonrpc`
/// the JSON-RPC 2.0 control (`POST`, or a WebSocket that also receives the hub's notifications). Every other path
/// answers a JSON `UnknownCall` with 404.
public enum SpeakerHubServer {
    /// The routes over `api`.
    public static func router(_ api: HubAPI) -> Router<HubRequestContext> {
        let router = Router(context: HubRequestContext.self)
        router.get("/v1/:name") { request, context -> Response in
            let name = context.parameters.get("name") ?? ""
            let answer = await api.handle(name: Substring(name), query: request.uri.query.map { Substring($0) }, client: context.client)
            return json(answer)
        }
        router.get("/") { _, _ -> Response in
            let o = await api.overview()
            let page = HubPage.render(devices: o.devices, media: o.media, playback: o.playback, problem: o.error)
            var headers = HTTPFields()
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page)))
        }
        router.get("/page/status") { _, _ -> Response in
            json(HubAnswer(json: HubPage.status(await api.player.playback())))
        }
        let peers = HubRPCServer.Peers()
        router.post("/jsonrpc") { request, context -> Response in
            await HubRPCServer.post(api, request: request, peer: peers.peer(for: context.client))
        }
        router.ws("/jsonrpc") { inbound, outbound, context in
            try await HubRPCServer.serve(api, client: context.requestContext.client, inbound: inbound, outbound: outbound)
        }
        router.get("/**") { request, _ -> Response in
            json(HubError(.unknownCall, "there is nothing at '\(request.uri.path.prefix(80))'; calls are GET /v1/NAME (docs/hub.md)").answer)
        }
        return router
    }

    static func json(_ answer: HubAnswer) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: HTTPResponse.Status(code: answer.status), headers: headers,
                        body: .init(byteBuffer: ByteBuffer(string: answer.body)))
    }

    /// Starts serving on `host:port` (0: a free port) and returns once the server listens.
    /// - Throws: `HubError(.cannotServe)` when the address cannot be bound.
    public static func start(_ api: HubAPI, host: String, port: Int, logger: Logger? = nil) async throws -> RunningHub {
        var log = logger ?? Logger(label: "tuneup.hub")
        if logger == nil { log.logLevel = .warning }
        let (events, sink) = AsyncStream<Result<Int, HubError>>.makeStream()
        let routes = router(api)
        let app = Application(
            router: routes, server: .http1WebSocketUpgrade(webSocketRouter: routes, configuration: .init(ws: .init(maxFrameSize: HubRPCServer.maxSocketMessage))),
            configuration: .init(address: .hostname(host, port: port), serverName: "tuneup-hub"),
            onServerRunning: { channel in sink.yield(.success(channel.localAddress?.port ?? port)) }, logger: log)
        let group = ServiceGroup(configuration: .init(services: [app], logger: log))
        let task = Task {
            do {
                try await group.run()
                sink.yield(.failure(HubError(.cannotServe, "the server on \(host):\(port) stopped before it listened")))
            } catch {
                sink.yield(.failure(HubError(.cannotServe, "cannot serve on \(host):\(port): \(error)")))
                throw error
            }
        }
        for await event in events {
            switch event {
            case let .success(actual): return RunningHub(host: host, port: actual, group: group, task: task, events: api.events)
            case let .failure(error): throw error
            }
        }
        task.cancel()
        throw CancellationError()
    }
}

/// A serving hub: where it listens, and how to stop it.
public final class RunningHub: Sendable {
    public let host: String
    public let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    private let events: HubEvents?

    init(host: String, port: Int, group: ServiceGroup, task: Task<Void, any Error>, events: HubEvents? = nil) {
        self.events = events
        self.host = host
        self.port = port
        self.group = group
        self.task = task
    }

    /// `http://HOST:PORT`.
    public var url: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// Stops serving (requests under way are answered first, JSON-RPC WebSockets are let go) and returns when the
    /// server has closed.
    public func stop() async {
        events?.finishAll()
        await group.triggerGracefulShutdown()
        _ = await task.result
    }

    /// Returns when the server ends (an error, or `stop()`).
    public func wait() async throws {
        try await task.value
    }
}
