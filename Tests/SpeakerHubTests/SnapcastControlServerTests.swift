import OrderedJSON
import Foundation
import SpeakerHub
import SpeakerHubCore
import Synchronization
import TestSupport
import Testing
import Transport

/// A raw TCP client of the Snapcast control: lines in, lines out.
final class ControlLink: Sendable {
    let link: any Transport
    private let buffer = LockedBytes()

    final class LockedBytes: Sendable {
        private let bytes = Mutex<[UInt8]>([])
        func append(_ more: [UInt8]) { bytes.withLock { $0 += more } }
        /// The complete lines so far, each with its ending as it came.
        var lines: [String] {
            bytes.withLock { bytes in
                var out: [String] = []
                var start = 0
                for (k, b) in bytes.enumerated() where b == 10 {
                    out.append(String(decoding: bytes[start...k], as: UTF8.self))
                    start = k + 1
                }
                return out
            }
        }
    }

    private let reader: Task<Void, Never>

    init(port: Int) async throws {
        let link = try await TCPTransport.connect(host: "127.0.0.1", port: UInt16(port))
        self.link = link
        let buffer = buffer
        reader = Task {
            while let chunk = try? await link.receive() { buffer.append(chunk) }
        }
    }

    func send(_ text: String) async throws { try await link.send(Array(text.utf8)) }

    var lines: [String] { buffer.lines }

    /// The messages so far (each line parsed).
    func messages() throws -> [OrderedJSON] { try lines.map { try OrderedJSON.parse(Array($0.utf8)) } }

    func close() async {
        reader.cancel()
        await link.close()
    }
}

/// Snapcast's TCP control (docs/hub.md §9.1): newline-delimited, answered with CRLF lines, only Snapcast's
/// notifications pushed; a port in use is a clear error when asked for, a warning for the default.
@Suite("Hub: Snapcast's TCP control")
struct SnapcastControlServerTests {
    @Test func linesAreAnsweredInOrderAndOnlySnapcastNotificationsArePushed() async throws {
        try await withHub { hub in
            let control = try await SnapcastControlServer.start(hub.api, host: "127.0.0.1", port: 0)
            let client = try await ControlLink(port: control.port)
            do {
                // Two requests in one write, one ending in LF only, then a batch, then a blank line (ignored).
                try await client.send(#"{"id":1,"jsonrpc":"2.0","method":"Server.GetRPCVersion"}"# + "\n"
                                      + #"{"id":2,"jsonrpc":"2.0","method":"Group.GetStatus","params":{"id":"nope"}}"# + "\r\n"
                                      + #"[{"id":3,"jsonrpc":"2.0","method":"Server.GetRPCVersion"},{"jsonrpc":"2.0","method":"Server.GetRPCVersion"}]"#
                                      + "\r\n\r\n")
                try await waitUntil("three answers") { client.lines.count >= 3 }
                #expect(client.lines.allSatisfy { $0.hasSuffix("}\r\n") || $0.hasSuffix("]\r\n") }, "\(client.lines)")
                let answers = try client.messages()
                #expect(answers[0]["id"] == .int(1) && answers[0]["result"]?["major"] == .int(2))
                #expect(answers[1]["error"] == .object([("code", .int(-32603)), ("data", .string("Group not found")), ("message", .string("Internal error"))]))
                #expect(answers[2][0]?["id"] == .int(3) && answers[2][1] == nil, "the batch's notification is not answered")

                // A play publishes the hub's own notifications (Player.*, Client.OnActiveChanged) and Snapcast's
                // Stream.OnUpdate: only that one comes here. A volume after it marks the end of what came.
                let s = "SessionID=\(try await hub.session())"
                #expect(try await hub.get("/v1/play_hub_media_party_mode?\(s)&PersistentID=\(MediaInfo.persistentID(of: "a-song.wav"))").status == 200)
                #expect(try await hub.get("/v1/set_volume_device?\(s)&DeviceID=\(hub.ids[0])&Volume=9").status == 200)
                try await waitUntil("the volume's notification") {
                    try client.messages().contains { $0["method"] == .string("Client.OnVolumeChanged") }
                }
                let methods = try client.messages().compactMap { m -> String? in if case let .string(s)? = m["method"] { s } else { nil } }
                #expect(methods.contains("Stream.OnUpdate"), "\(methods)")
                #expect(methods.allSatisfy { Snapcast.notifications.contains($0) }, "\(methods)")
            } catch {
                await client.close()
                await control.stop()
                throw error
            }
            await client.close()
            await control.stop()
        }
    }

    /// `server.host` is this machine, read from the system as snapserver reads it.
    @Test func theServersHostIsThisMachine() {
        let host = SnapcastControlServer.thisHost()
        #expect(!host.name.isEmpty && host.name != Snapcast.Host.unnamed.name && host.os == "Linux" && !host.arch.isEmpty, "\(host)")
    }

    /// As snapserver, the hub does not tell a connection of the change it made itself; the others are told.
    @Test func theConnectionThatMadeAChangeIsNotToldOfIt() async throws {
        try await withHub { hub in
            let control = try await SnapcastControlServer.start(hub.api, host: "127.0.0.1", port: 0)
            let (a, b) = (try await ControlLink(port: control.port), try await ControlLink(port: control.port))
            func volumes(_ link: ControlLink) throws -> [OrderedJSON] {
                try link.messages().filter { $0["method"] == .string("Client.OnVolumeChanged") }.compactMap { $0["params"]?["volume"]?["percent"] }
            }
            do {
                for link in [a, b] {  // both are subscribed once they have an answer
                    try await link.send(#"{"id":1,"jsonrpc":"2.0","method":"Server.GetRPCVersion"}"# + "\r\n")
                    try await waitUntil("an answer") { !link.lines.isEmpty }
                }
                let id = hub.ids[0]
                try await a.send(#"{"id":2,"jsonrpc":"2.0","method":"Client.SetVolume","params":{"id":"\#(id)","volume":{"percent":20}}}"#
                                 + "\r\n")
                try await waitUntil("the other connection is told") { try volumes(b) == [.int(20)] }
                // A change made elsewhere (the v1 API) reaches both, after anything a's own change would have sent.
                let s = "SessionID=\(try await hub.session())"
                #expect(try await hub.get("/v1/set_volume_device?\(s)&DeviceID=\(id)&Volume=30").status == 200)
                try await waitUntil("both are told of the other change") { try volumes(a) == [.int(60)] && volumes(b) == [.int(20), .int(60)] }
            } catch {
                await a.close(); await b.close(); await control.stop()
                throw error
            }
            await a.close(); await b.close(); await control.stop()
        }
    }

    /// An explicit port in use is an error naming it; Snapcast's default port in use (here by this test) leaves the
    /// hub without the TCP control and says so.
    @Test func aPortInUseIsAnErrorWhenAskedForAndAWarningByDefault() async throws {
        try await withHub { hub in
            let first = try await SnapcastControlServer.start(hub.api, host: "127.0.0.1", port: 0)
            do {
                _ = try await SnapcastControlServer.start(hub.api, host: "127.0.0.1", port: first.port)
                Issue.record("a second control server listened on \(first.port)")
            } catch let error as HubError {
                #expect(error.code == .cannotServe && error.message.contains("127.0.0.1:\(first.port)") && error.message.contains("in use"), "\(error.message)")
            }
            // Whoever holds 1705 now (this test, or another program), the default gives way with a warning.
            let holder = try? await TCPListener.bind(host: "127.0.0.1", port: UInt16(SnapcastControlServer.defaultPort))
            let started = try await SnapcastControlServer.start(hub.api, host: "127.0.0.1", requested: nil)
            #expect(started.server == nil && started.warning?.contains("1705") == true, "\(started.warning ?? "no warning")")
            holder?.close()
            await first.stop()
        }
    }
}
