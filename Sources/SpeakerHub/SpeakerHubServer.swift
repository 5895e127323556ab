import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import SpeakerHubCore
import WebServing

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
    public static func router(_ api: HubAPI, webSocketHandlers: WebSocketHandlers = WebSocketHandlers()) -> Router<HubRequestContext> {
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
            try await webSocketHandlers.run {
                try await HubRPCServer.serve(api, client: context.requestContext.client, inbound: inbound, outbound: outbound)
            }
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
        do {
            let handlers = WebSocketHandlers()
            let server = try await WebServer.start(
                router(api, webSocketHandlers: handlers), host: host, port: port, serverName: "tuneup-hub",
                maxFrameSize: HubRPCServer.maxSocketMessage, webSocketHandlers: handlers, logger: log)
            return RunningHub(host: host, server: server, events: api.events)
        } catch is WebServer.StoppedBeforeListening {
            throw HubError(.cannotServe, "the server on \(host):\(port) stopped before it listened")
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw HubError(.cannotServe, BindFailure.message(error, host: host, port: port))
        }
    }
}

/// A serving hub: where it listens, and how to stop it.
public final class RunningHub: Sendable {
    public let host: String
    public let port: Int
    private let server: WebServer
    private let events: HubEvents?

    init(host: String, server: WebServer, events: HubEvents? = nil) {
        self.events = events
        self.host = host
        self.port = server.port
        self.server = server
    }

    /// `http://HOST:PORT`.
    public var url: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// Connections open now (clients' keep-alive connections and WebSockets, idle ones).
    public var openConnections: Int { server.openConnections }

    /// Stops serving and returns when the server has closed, within about a second whatever the clients do:
    /// requests under way are answered first, JSON-RPC WebSockets get a close frame, idle connections are closed
    /// (see `WebServer`).
    public func stop() async {
        events?.finishAll()
        await server.stop()
    }

    /// Returns when the server ends (an error, or `stop()`).
    public func wait() async throws {
        try await server.wait()
    }
}
