import SpeakerHub
import TestSupport
import Testing

/// Stopping the hub (Ctrl-C, `quit`) does not wait for its clients: a connection that never sent anything and a
/// keep-alive one are closed, a JSON-RPC WebSocket that never answers gets a close frame and is closed, and `stop()`
/// returns. Hummingbird alone waited for the idle connection until the client went away.
@Suite struct HubStopTests {
    @Test func stoppingClosesIdleConnectionsAndWebSocketsAndReturns() async throws {
        try await withHub(speakers: 1) { fixture in
            let hub = fixture.hub
            let idle = try await IdleClient.connect(port: hub.port)
            let keptAlive = try await IdleClient.connect(port: hub.port)
            let (head, _) = try await keptAlive.request("/v1/device_count")
            #expect(head.hasPrefix("HTTP/1.1 "), "\(head)")
            let socket = try await IdleClient.connect(port: hub.port)
            _ = try await socket.openWebSocket("/jsonrpc")
            try await waitUntil("the hub holds three connections", within: 20) { hub.openConnections == 3 }

            let stopping = Task { await hub.stop() }
            #expect(try await idle.readToEnd().isEmpty)
            #expect(try await keptAlive.readToEnd().isEmpty)
            let frames = try webSocketFrames(try await socket.readToEnd())
            #expect(frames.map(\.opcode) == [8], "one close frame, then the end")
            try await withTimeLimit(20) {
                await stopping.value
                try await hub.wait()
            }
            // The server's count drops as each connection's close is seen (right after, on its event loop).
            try await waitUntil("every connection is let go", within: 20) { hub.openConnections == 0 }
        }
    }
}
