import StationPage
import TestSupport
import Testing

/// Stopping the page's server (the station ends, Ctrl-C, the line dashboard's Ctrl-C) does not wait for its clients:
/// a connection that never sent anything and a keep-alive one are closed, a WebSocket that never answers gets a close
/// frame and is closed, and `stop()` returns. Hummingbird alone waited for the idle connection until the client went
/// away (with a browser's spare connection, about a minute).
@Suite struct PageServerStopTests {
    @Test func stoppingClosesIdleConnectionsAndWebSocketsAndReturns() async throws {
        let sections = Sections()
        sections.update { $0.set("header", ["station": "stop-test"]) }
        let server = try await PageServer.start(sections, on: ListenAddress(host: "127.0.0.1", port: 0), serverName: "t") { _ in "<html></html>" }
        let idle = try await IdleClient.connect(port: server.port)
        let keptAlive = try await IdleClient.connect(port: server.port)
        let (head, body) = try await keptAlive.request("/state")
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
        #expect(String(decoding: body, as: UTF8.self).contains("stop-test"))
        let socket = try await IdleClient.connect(port: server.port)
        _ = try await socket.openWebSocket("/ws")
        // All three accepted before the server stops (else the stop could come before the idle one is).
        try await waitUntil("the server holds three connections", within: 20) { server.openConnections == 3 }

        let stopping = Task { await server.stop() }
        // Each connection ends with the server's EOF (a reset, or no end within the bound, fails).
        #expect(try await idle.readToEnd().isEmpty)
        #expect(try await keptAlive.readToEnd().isEmpty)
        let frames = try webSocketFrames(try await socket.readToEnd())
        // The page's first message (the whole state) may be among them; the last frame is the close.
        #expect(frames.last?.opcode == 8, "\(frames.map(\.opcode))")
        try await withTimeLimit(20) {
            await stopping.value
            try await server.wait()
        }
        // The server's count drops as each connection's close is seen (right after, on its event loop).
        try await waitUntil("every connection is let go", within: 20) { server.openConnections == 0 }
    }

    /// Stopping while the page's state changes all the time: each page's WebSocket ends with the close frame, no
    /// message after it (RFC 6455 §5.5.1). Hummingbird's shutdown sends its close frame from a task of its own, which
    /// overtook the message the page's handler was writing (seen in CI as frames 1,1,1,8,1); the server now lets the
    /// handlers end before it shuts down.
    @Test func noMessageFollowsTheCloseFrameWhileTheStateChanges() async throws {
        for round in 0..<5 {
            let sections = Sections()
            let server = try await PageServer.start(sections, on: ListenAddress(host: "127.0.0.1", port: 0), serverName: "t") { _ in "" }
            var sockets: [IdleClient] = []
            for _ in 0..<3 {
                let socket = try await IdleClient.connect(port: server.port)
                _ = try await socket.openWebSocket("/ws")
                sockets.append(socket)
            }
            try await waitUntil("three pages are connected", within: 20) { server.connectedPages == 3 }
            let changing = Task {
                var n = 0
                while !Task.isCancelled {
                    n += 1
                    sections.update { $0.set("count", ["n": n]) }
                    await Task.yield()
                }
            }
            try await waitUntil("the state changed", within: 20) { sections.changes >= 100 }
            await server.stop()
            changing.cancel()
            for socket in sockets {
                let frames = try webSocketFrames(try await socket.readToEnd())
                #expect(frames.count > 1 && frames.last?.opcode == 8 && frames.filter { $0.opcode == 8 }.count == 1,
                        "round \(round): \(frames.count) frames, the last \(frames.suffix(3).map(\.opcode))")
            }
        }
    }

    /// A client that sent half a request and then nothing: the server gives it its grace (0.5 s), then closes it
    /// (Hummingbird alone waited for the rest of the request for ever).
    @Test func aRequestThatNeverEndsIsClosedAfterTheGrace() async throws {
        let server = try await PageServer.start(Sections(), on: ListenAddress(host: "127.0.0.1", port: 0), serverName: "t") { _ in "" }
        let halfway = try await IdleClient.connect(port: server.port)
        try await halfway.send("GET /state HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        try await waitUntil("the server holds the connection", within: 20) { server.openConnections == 1 }
        let stopping = Task { await server.stop() }
        // The end of the connection (a reset when the stop came before the server read the half request).
        #expect(try await halfway.readToEnd(resetIsAnEnd: true).isEmpty)
        try await withTimeLimit(20) { await stopping.value }
        try await waitUntil("every connection is let go", within: 20) { server.openConnections == 0 }
    }
}
