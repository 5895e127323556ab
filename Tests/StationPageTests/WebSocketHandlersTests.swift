import Hummingbird
import HummingbirdWebSocket
import Logging
import TestSupport
import Testing
import WebServing

/// A stopping `WebServer` lets its WebSocket handlers end before Hummingbird's shutdown sends its close frame: the
/// handler's last message comes before the close frame, never after it (RFC 6455 §5.5.1). The handler here is held
/// until the server is seen waiting for it; then it writes its last message and ends.
@Suite struct WebSocketHandlersTests {
    @Test func aStoppingServerWaitsForItsHandlersAndTheirLastMessageComesBeforeTheClose() async throws {
        let handlers = WebSocketHandlers()
        let (released, release) = AsyncStream<Void>.makeStream()
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.ws("/ws") { _, outbound, _ in
            try await handlers.run {
                for await _ in released { break }
                try await outbound.write(.text("last"))
            }
        }
        var log = Logger(label: "test")
        log.logLevel = .critical
        // A grace longer than the steps between the stop and the release (the order must come from the wait, not from
        // the grace running out); the client never answers the close frame, so the connection ends after it.
        let server = try await WebServer.start(router, host: "127.0.0.1", port: 0, serverName: "t", grace: .seconds(5),
                                               webSocketHandlers: handlers, logger: log)
        let socket = try await IdleClient.connect(port: server.port)
        _ = try await socket.openWebSocket("/ws")
        try await waitUntil("the handler runs", within: 20) { handlers.running == 1 }

        let stopping = Task { await server.stop() }
        try await waitUntil("the stopping server waits for the handler", within: 20) { handlers.waiting == 1 }
        release.yield(())
        let frames = try webSocketFrames(try await socket.readToEnd())
        #expect(frames.map(\.opcode) == [1, 8])
        #expect(frames.first.map { String(decoding: $0.payload, as: UTF8.self) } == "last")
        try await withTimeLimit(20) { await stopping.value }
        #expect(handlers.running == 0 && handlers.waiting == 0)
    }
}
