import Foundation
import Spawn
import TestSupport
import Testing

/// Ctrl-C ends `station run --ui` and `speaker hub` while clients hold connections that say nothing: one that never
/// sent a request (a browser's spare connection), a keep-alive one after a request, a WebSocket that never answers.
/// Each is closed (the WebSocket after a close frame) and the process exits; before, the idle connection kept the
/// process until the client went away (a minute with Chromium, for ever with a silent client).
@Suite struct ServerStopCLITests {
    /// The three idle clients of a server on `port`; `webSocket` the path of its WebSocket.
    static func idleClients(port: Int, request: String, webSocket: String) async throws -> [IdleClient] {
        let idle = try await IdleClient.connect(port: port)
        let keptAlive = try await IdleClient.connect(port: port)
        let (head, _) = try await keptAlive.request(request)
        #expect(head.hasPrefix("HTTP/1.1 "), "\(head)")
        let socket = try await IdleClient.connect(port: port)
        _ = try await socket.openWebSocket(webSocket)
        return [idle, keptAlive, socket]
    }

    /// Each client sees its connection end (the WebSocket with a close frame last) within the bound.
    static func expectClosed(_ clients: [IdleClient]) async throws {
        #expect(try await clients[0].readToEnd().isEmpty)
        #expect(try await clients[1].readToEnd().isEmpty)
        let frames = try webSocketFrames(try await clients[2].readToEnd())
        #expect(frames.last?.opcode == 8, "\(frames.map(\.opcode))")
    }

    @Test func ctrlCEndsAWatchingStationWhoseOperatorPageHasIdleClients() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--count", "1", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"], count: 1)
        let (directory, recipe) = try StationCLITests.recipe()
        let station = try await offThePool {
            try ChildProcess(CLI.binary.path, ["station", "run", "--recipe", recipe, "-d", sim.addresses[0], "--watch", "--ui", "127.0.0.1:0",
                                               "--db", directory + "/records.sqlite", "--format", "json"])
        }
        let first = await station.errors!.lines(1, timeout: 60).first ?? ""
        let port = try #require(Int(first.split(separator: ":").last?.filter(\.isNumber) ?? ""), "\(first)")
        let clients = try await Self.idleClients(port: port, request: "/state", webSocket: "/ws")
        station.interrupt()
        try await Self.expectClosed(clients)
        #expect(try await exitStatus(of: station, within: 20) == 130)
        _ = await sim.quit()
    }

    @Test func ctrlCEndsAHubWithIdleClients() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let media = Scratch.directory
        let hub = try await offThePool {
            try ChildProcess(CLI.binary.path, ["speaker", "hub", "--media", media, "--listen", "127.0.0.1:0"] + sim.speakerArgs, stdin: .pipe)
        }
        let url = await hub.output!.lines(1, timeout: 60).first ?? ""
        let port = try #require(Int(url.split(separator: ":").last?.filter(\.isNumber) ?? ""), "\(url) \(hub.errors!.text)")
        let clients = try await Self.idleClients(port: port, request: "/v1/device_count", webSocket: "/jsonrpc")
        hub.interrupt()
        try await Self.expectClosed(clients)
        #expect(try await exitStatus(of: hub, within: 20) == 0)
        #expect(!hub.errors!.text.contains("error"), "\(hub.errors!.text)")
        _ = await sim.quit()
    }

    /// The same with a client idle on the Snapcast control port (newline-delimited JSON-RPC over TCP): Ctrl-C ends
    /// its connection and the hub.
    @Test func ctrlCEndsAHubWithAnIdleSnapcastControlClient() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let media = Scratch.directory
        let hub = try await offThePool {
            try ChildProcess(CLI.binary.path, ["speaker", "hub", "--media", media, "--listen", "127.0.0.1:0", "--control-port", "0"]
                                + sim.speakerArgs, stdin: .pipe)
        }
        _ = await hub.output!.lines(1, timeout: 60)
        let line = await hub.errors!.lines(1, timeout: 60).first { $0.contains("Snapcast control") } ?? ""
        let port = try #require(Int(line.split(separator: ":").last?.filter(\.isNumber) ?? ""), "\(line) \(hub.errors!.text)")
        let control = try await IdleClient.connect(port: port)
        hub.interrupt()
        #expect(try await control.readToEnd().isEmpty)
        #expect(try await exitStatus(of: hub, within: 20) == 0)
        _ = await sim.quit()
    }
}
