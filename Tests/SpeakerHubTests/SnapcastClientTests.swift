import OrderedJSON
import Foundation
import Spawn
import SpeakerHub
import SpeakerHubCore
import SpeakerSession
import Support
import Synchronization
import TestSupport
import Testing
import Transport

/// `tools/snapcast-client.py`: the PyPI `snapcast` control client (Home Assistant's) driven one command a line.
final class SnapcastScript: Sendable {
    let child: ChildProcess
    private let read = Mutex(0)

    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("tools/snapcast-client.py").path

    /// The script's Python has the `snapcast` module (else a test failure saying what to install: no skip).
    static func checkInstalled() async throws {
        let check = try ChildProcess("/usr/bin/env", ["python3", "-c", "import snapcast.control"], stdout: .null, stderr: .pipe)
        let end = await check.exited()
        let why = await check.errors?.finishedText(timeout: 10) ?? ""
        guard end == .exit(0) else {
            throw TestFailure("the PyPI snapcast client is not installed for python3 (pip install snapcast==2.3.8; tools/install-deps.sh): \(why)")
        }
    }

    /// Connects the client to the control port `port` on loopback.
    init(port: Int) async throws {
        child = try ChildProcess("/usr/bin/env", ["python3", Self.path, "127.0.0.1", String(port)], stdin: .pipe)
        _ = try await next("connect")
    }

    /// Lines the script has answered so far.
    var answered: Int { (child.output?.text ?? "").split(separator: "\n").count }

    private func next(_ command: String) async throws -> OrderedJSON {
        let k = read.withLock { $0 += 1; return $0 }
        let lines = await child.output?.lines(k, timeout: 300) ?? []
        guard lines.count >= k else {
            throw TestFailure("the snapcast client did not answer '\(command)': \(child.errors?.text ?? "")")
        }
        let answer = try OrderedJSON.parse(Array(lines[k - 1].utf8))
        guard answer["ok"] == .bool(true) else { throw TestFailure("the snapcast client, '\(command)': \(lines[k - 1])") }
        return answer
    }

    /// Sends `command` and returns its answer (a test failure unless it is ok).
    @discardableResult
    func run(_ command: String) async throws -> OrderedJSON {
        child.write(command + "\n")
        return try await next(command)
    }

    /// Sends `command` without reading its answer (`finish()` reads it).
    func send(_ command: String) { child.write(command + "\n") }
    func finish(_ command: String) async throws -> OrderedJSON { try await next(command) }

    func stop() async {
        child.write("quit\n")
        child.closeInput()
        _ = await child.exited(within: 10)
    }
}

/// A real snapserver 0.26 on free loopback ports with its own configuration (no system file, no HTTP), and one
/// snapclient playing to /dev/null (no sound card), so that there is a client to list.
final class SnapserverFixture: Sendable {
    let dir: String
    let server: ChildProcess
    let client: Mutex<ChildProcess?>
    let streamPort: Int
    let controlPort: Int
    static let hostID = "tuneup-test-client"

    private init(dir: String, server: ChildProcess, streamPort: Int, controlPort: Int) {
        (self.dir, self.server, self.streamPort, self.controlPort) = (dir, server, streamPort, controlPort)
        client = Mutex(nil)
    }

    static func start() async throws -> SnapserverFixture {
        let (snapserver, snapclient) = ("/usr/bin/snapserver", "/usr/bin/snapclient")
        guard access(snapserver, X_OK) == 0, access(snapclient, X_OK) == 0 else {
            throw TestFailure("snapserver 0.26 and snapclient are not installed (tools/install-deps.sh installs them)")
        }
        let dir = try TemporaryDirectory.make("snapserver")
        var ports: Set<Int> = []
        while ports.count < 2 { ports.insert(try LoopbackPort.unused()) }
        let (stream, control) = (ports.min()!, ports.max()!)
        let config = """
            [server]
            datadir = \(dir)
            threads = -1
            [stream]
            source = pipe://\(dir)/snapfifo?name=default&mode=create
            bind_to_address = 127.0.0.1
            port = \(stream)
            [tcp]
            enabled = true
            bind_to_address = 127.0.0.1
            port = \(control)
            [http]
            enabled = false
            [logging]
            sink = stderr

            """
        try await Blocking.perform("snapserver.conf") {
            guard FileManager.default.createFile(atPath: dir + "/snapserver.conf", contents: Data(config.utf8)) else {
                throw TestFailure("cannot write \(dir)/snapserver.conf")
            }
        }
        let server = try ChildProcess(snapserver, ["-c", dir + "/snapserver.conf"], stdout: .file(dir + "/snapserver.log"), stderr: .stdout)
        let fixture = SnapserverFixture(dir: dir, server: server, streamPort: stream, controlPort: control)
        try await waitUntil("snapserver listens on its control port") {
            guard server.isRunning else { throw TestFailure("snapserver ended: \(server.termination.map { "\($0)" } ?? "")") }
            guard let link = try? await TCPTransport.connect(host: "127.0.0.1", port: UInt16(control)) else { return false }
            await link.close()
            return true
        }
        try fixture.startClient()
        return fixture
    }

    /// Starts the snapclient (again).
    func startClient() throws {
        let c = try ChildProcess("/usr/bin/snapclient", ["-h", "127.0.0.1", "-p", String(streamPort), "--hostID", Self.hostID,
                                                         "--player", "file:filename=/dev/null", "--logsink", "null"],
                                 stdout: .null, stderr: .null)
        client.withLock { $0 = c }
    }

    /// Stops the snapclient (it vanishes: snapserver says `Client.OnDisconnect`).
    func stopClient() async {
        guard let c = client.withLock({ c in defer { c = nil }; return c }) else { return }
        c.terminate()
        _ = await c.exited(within: 10)
    }

    func stop() async {
        await stopClient()
        server.terminate()
        _ = await server.exited(within: 10)
        try? await Blocking.perform("remove") { try? FileManager.default.removeItem(atPath: self.dir) }
    }
}

/// One request on a control connection of its own (another controller): its result, or a test failure with its error.
@discardableResult
func snapcastCall(port: Int, _ method: String, _ params: String) async throws -> OrderedJSON {
    let link = try await TCPTransport.connect(host: "127.0.0.1", port: UInt16(port))
    defer { Task { await link.close() } }
    try await link.send(Array(#"{"id":1,"jsonrpc":"2.0","method":"\#(method)","params":\#(params)}"#.utf8) + [13, 10])
    var buffer: [UInt8] = []
    while true {
        buffer += try await link.receive()
        while let newline = buffer.firstIndex(of: 10) {
            let line = Array(buffer[..<newline])
            buffer.removeSubrange(...newline)
            let message = try OrderedJSON.parse(line)
            guard message["id"] == .int(1) else { continue }  // a notification
            guard let result = message["result"] else { throw TestFailure("\(method): \(String(decoding: line, as: UTF8.self))") }
            return result
        }
    }
}

/// The structure of a JSON value: every path with its type (`server.groups[].clients[].id: string`); the values of
/// free-form maps (a stream's URI query and metadata, which differ by source in Snapcast too) are not compared.
func jsonShape(_ v: OrderedJSON, _ path: String = "") -> Set<String> {
    switch v {
    case .string: return ["\(path): string"]
    case .int, .double: return ["\(path): number"]
    case .bool: return ["\(path): bool"]
    case .null: return ["\(path): null"]
    case let .array(items): return items.reduce(into: ["\(path): array"]) { $0.formUnion(jsonShape($1, path + "[]")) }
    case let .object(fields):
        if path.hasSuffix(".uri.query") || path.hasSuffix(".properties.metadata") { return ["\(path): map"] }
        return fields.reduce(into: ["\(path): object"]) { $0.formUnion(jsonShape($1.1, path + "." + $1.0)) }
    }
}

/// Issue 34: the PyPI `snapcast` client — Home Assistant's — controls the hub's simulated speakers over Snapcast's TCP
/// control as it controls a real snapserver 0.26, which the same test starts: the same steps run against both, and the
/// structure of `Server.GetStatus` and of each notification must be the same.
@Suite("Hub: the Snapcast client against the hub and a real snapserver")
struct SnapcastClientTests {
    /// What one run of the client saw.
    struct Seen: Sendable {
        var status: OrderedJSON
        var notifications: [String: OrderedJSON] = [:]
    }

    static func notifications(_ script: SnapcastScript) async throws -> [String: OrderedJSON] {
        guard case let .array(items)? = try await script.run("notifications")["notifications"] else { throw TestFailure("no notifications") }
        var out: [String: OrderedJSON] = [:]
        for item in items {
            if case let .string(method)? = item["method"], out[method] == nil { out[method] = item["params"] ?? .null }
        }
        return out
    }

    /// The steps against a real snapserver with one snapclient.
    static func againstSnapserver() async throws -> Seen {
        let snap = try await SnapserverFixture.start()
        do {
            let script = try await SnapcastScript(port: snap.controlPort)
            try await script.run("wait-clients 1")
            let status = try await script.run("status")
            let id = SnapserverFixture.hostID
            guard case let .string(group)? = status["clients"]?[0]?["group"] else { throw TestFailure("\(status.rendered)") }
            try await script.run("set-volume \(id) 34")
            try await script.run("mute \(id) 1")
            try await script.run("mute \(id) 0")
            try await script.run("group-mute \(group) 1")
            try await script.run("group-mute \(group) 0")
            #expect(try await script.run("status")["clients"]?[0]?["volume"] == .int(34))
            // Another controller's changes reach the client.
            try await snapcastCall(port: snap.controlPort, "Client.SetVolume", #"{"id":"\#(id)","volume":{"percent":62,"muted":false}}"#)
            try await script.run("wait-volume \(id) 62")
            try await snapcastCall(port: snap.controlPort, "Group.SetMute", #"{"id":"\#(group)","mute":true}"#)
            try await snapcastCall(port: snap.controlPort, "Group.SetMute", #"{"id":"\#(group)","mute":false}"#)
            try await script.run("wait-notification Group.OnMute")
            // The client vanishes and comes back.
            await snap.stopClient()
            try await script.run("wait-connected \(id) 0")
            try snap.startClient()
            try await script.run("wait-connected \(id) 1")
            try await script.run("set-volume \(id) 50")
            // Another controller sets a group's clients: the client gets the whole server again.
            try await snapcastCall(port: snap.controlPort, "Group.SetClients", #"{"id":"\#(group)","clients":["\#(id)"]}"#)
            try await script.run("wait-notification Server.OnUpdate")
            var seen = Seen(status: status["raw"] ?? .null)
            seen.notifications = try await notifications(script)
            await script.stop()
            await snap.stop()
            return seen
        } catch {
            await snap.stop()
            throw error
        }
    }

    /// The same steps against the hub over two simulated speakers, its Snapcast control on a free port.
    static func againstTheHub() async throws -> Seen {
        final class Box: Sendable { let seen = Mutex<Seen?>(nil) }
        let box = Box()
        try await withHub(speakers: 2) { hub in
            let control = try await SnapcastControlServer.start(hub.api, host: "127.0.0.1", port: 0)
            let script = try await SnapcastScript(port: control.port)
            do {
                let (a, b) = (String(hub.ids[0]), String(hub.ids[1]))
                let status = try await script.run("status")
                // The speakers, with their names and volumes (percent: twice the speaker's volume).
                guard case let .array(clients)? = status["clients"] else { throw TestFailure(status.rendered) }
                let listed = clients.map { c in [c["id"], c["name"], c["volume"]].map { $0?.rendered ?? "-" }.joined(separator: " ") }
                let expected = hub.sim.speakers.map { s in
                    [OrderedJSON.string(String(s.deviceId)), .string(s.deviceInfo.deviceName.value), .int(2 * s.settings.volume)].map(\.rendered)
                        .joined(separator: " ")
                }
                #expect(listed == expected)
                guard case let .string(group)? = clients[1]["group"] else { throw TestFailure(status.rendered) }
                // A volume and a mute, seen on the speakers.
                try await script.run("set-volume \(a) 34")
                #expect(hub.sim.speakers[0].settings.volume == 17)
                try await script.run("mute \(a) 1")
                #expect(hub.sim.speakers[0].settings.muted)
                try await script.run("mute \(a) 0")
                #expect(!hub.sim.speakers[0].settings.muted)
                try await script.run("group-mute \(group) 1")
                #expect(hub.sim.speakers[1].settings.muted)
                try await script.run("group-mute \(group) 0")
                #expect(!hub.sim.speakers[1].settings.muted)
                #expect(try await script.run("status")["clients"]?[0]?["volume"] == .int(34))
                // Another controller's changes reach the client: the speaker's own controller (`tuneup speaker
                // volume`'s library call) and another Snapcast controller.
                let parts = hub.sim.endpoints[1].split(separator: ":")
                let other = try await SpeakerSession.connect(host: String(parts[0]), port: UInt16(parts[1])!)
                try await other.setVolume(31)
                await other.close()
                try await script.run("wait-volume \(b) 62")
                try await snapcastCall(port: control.port, "Group.SetMute", #"{"id":"\#(group)","mute":true}"#)
                try await snapcastCall(port: control.port, "Group.SetMute", #"{"id":"\#(group)","mute":false}"#)
                try await script.run("wait-notification Group.OnMute")
                // A speaker vanishes: the client is told, and keeps working with the other; it comes back.
                await hub.sim.speakers[1].powerOff()
                try await script.run("wait-connected \(b) 0")
                #expect(try await script.run("status")["clients"]?[1]?["connected"] == .bool(false))
                try await script.run("set-volume \(a) 40")
                #expect(hub.sim.speakers[0].settings.volume == 20)
                hub.sim.speakers[1].powerOn()
                let answered = script.answered
                script.send("wait-connected \(b) 1")
                try await waitUntil("the speaker is back for the client") {
                    if hub.clock.pendingSleeps > 0 { hub.clock.advance(by: .seconds(1)) }  // the hub's reconnection back-off
                    return script.answered > answered
                }
                _ = try await script.finish("wait-connected \(b) 1")
                try await script.run("set-volume \(b) 50")
                #expect(hub.sim.speakers[1].settings.volume == 25)
                // Another controller sets a group's clients: the speaker on its own becomes a named group of one.
                try await snapcastCall(port: control.port, "Group.SetClients", #"{"id":"\#(group)","clients":["\#(b)"]}"#)
                try await script.run("wait-notification Server.OnUpdate")
                #expect(hub.sim.speakers[1].deviceInfo.groupId != 0)
                var seen = Seen(status: status["raw"] ?? .null)
                seen.notifications = try await notifications(script)
                box.seen.withLock { $0 = seen }
            } catch {
                await script.stop()
                await control.stop()
                throw error
            }
            await script.stop()
            await control.stop()
        }
        guard let seen = box.seen.withLock({ $0 }) else { throw TestFailure("the hub's run saw nothing") }
        return seen
    }

    @Test func theSnapcastClientControlsTheHubAsItControlsSnapserver() async throws {
        try await SnapcastScript.checkInstalled()
        let real = try await Self.againstSnapserver()
        let hub = try await Self.againstTheHub()
        let (mine, theirs) = (jsonShape(hub.status), jsonShape(real.status))
        let (onlyHub, onlySnapserver) = (mine.subtracting(theirs).sorted(), theirs.subtracting(mine).sorted())
        #expect(onlyHub.isEmpty && onlySnapserver.isEmpty, "Server.GetStatus: only the hub's: \(onlyHub); only snapserver's: \(onlySnapserver)")
        for method in ["Client.OnVolumeChanged", "Client.OnDisconnect", "Client.OnConnect", "Group.OnMute", "Server.OnUpdate"] {
            guard let a = hub.notifications[method], let b = real.notifications[method] else {
                Issue.record("\(method): the hub sent \(hub.notifications[method] == nil ? "none" : "one"), snapserver \(real.notifications[method] == nil ? "none" : "one")")
                continue
            }
            let (x, y) = (jsonShape(a), jsonShape(b))
            let (onlyHub, onlySnapserver) = (x.subtracting(y).sorted(), y.subtracting(x).sorted())
            #expect(onlyHub.isEmpty && onlySnapserver.isEmpty, "\(method): only the hub's: \(onlyHub); only snapserver's: \(onlySnapserver)")
        }
    }
}
