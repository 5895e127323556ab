import OrderedJSON
import Foundation
import SpeakerHubCore
import TestSupport
import Testing

/// Snapcast's control API over the hub (docs/hub.md §9), without sockets: the mapping's pure values (volume ↔ percent,
/// speakers as clients and groups, the player as a stream) and every Snapcast method through the dispatcher over model
/// speakers and player, with snapserver's result shapes, errors and notifications.
@Suite("Hub: Snapcast's control API (pure)")
struct HubSnapcastTests {
    typealias Hub = HubRPCTests.Hub
    static let ids = HubRPCTests.ids
    static let song = HubRPCTests.song

    /// Every speaker volume survives volume → percent → volume, and every percent the hub reports survives
    /// percent → volume → percent; an odd percent is rounded up to the next speaker volume.
    @Test func volumesRoundTripExactly() {
        for v in 0...50 {
            #expect(Snapcast.volume(ofPercent: Snapcast.percent(ofVolume: v)) == v)
            let p = Snapcast.percent(ofVolume: v)
            #expect(Snapcast.percent(ofVolume: Snapcast.volume(ofPercent: p)) == p)
        }
        for p in 0...100 {
            let back = Snapcast.percent(ofVolume: Snapcast.volume(ofPercent: p))
            #expect(back == (p % 2 == 0 ? p : p + 1), "\(p) % reads back as \(back) %")
        }
        #expect(Snapcast.volume(ofPercent: 33) == 17 && Snapcast.volume(ofPercent: 1) == 1 && Snapcast.volume(ofPercent: 99) == 50)
    }

    static func device(_ k: Int, group: (UInt64, String)? = nil, connected: Bool = true) -> HubDevice {
        HubDevice(deviceID: 100 + UInt64(k), deviceName: "Speaker \(k)", groupID: group?.0 ?? 0, groupName: group?.1 ?? "harman",
                  modelName: "Omni 10", ipAddress: "10.0.0.\(k)", port: 4000 + k, macAddress: "aa:bb:cc:dd:ee:0\(k)", volume: 10 * k,
                  active: false, wifiSignalStrength: -40, role: 0, version: "0.1.6.2", isPlaying: false, connected: connected,
                  lastSeen: .seconds(1_767_225_600) + .microseconds(250))
    }

    /// Speakers in no group are groups of their own; a named group gathers its members where its first is listed.
    @Test func speakersAreClientsInGroups() {
        let list = [Self.device(1), Self.device(2, group: (102, "upstairs")), Self.device(3), Self.device(4, group: (102, "upstairs"), connected: false)]
        let groups = Snapcast.groups(list)
        #expect(groups.map(\.id) == ["speaker-101", "102", "speaker-103"])
        #expect(groups.map(\.name) == ["", "upstairs", ""])
        #expect(groups[1].members.map(\.deviceID) == [102, 104])
        #expect(groups[1].muted([102: true, 104: true]) && !groups[1].muted([102: true]))
        let client = Snapcast.client(list[3], muted: true)
        #expect(client.rendered == """
            {"config":{"instance":1,"latency":0,"name":"Speaker 4","volume":{"muted":true,"percent":80}},"connected":false,\
            "host":{"arch":"Omni 10","ip":"10.0.0.4","mac":"aa:bb:cc:dd:ee:04","name":"Speaker 4","os":"HKWirelessHD"},"id":"104",\
            "lastSeen":{"sec":1767225600,"usec":250},"snapclient":{"name":"HKWirelessHD","protocolVersion":2,"version":"0.1.6.2"}}
            """)
        let server = Snapcast.server(list, mutes: [:], playback: HubPlayback(state: .initialized),
                                     host: Snapcast.Host(name: "h", os: "Linux", arch: "x86_64"))
        #expect(server["server"]?["snapserver"]?["version"] == .string("0.26.0"))
        #expect(server["server"]?["host"] == .object([("arch", .string("x86_64")), ("ip", .string("")), ("mac", .string("")),
                                                      ("name", .string("h")), ("os", .string("Linux"))]))
        guard case let .array(streams)? = server["streams"] else { Issue.record("no streams: \(server)"); return }
        #expect(streams.count == 1 && streams[0]["id"] == .string("hub") && streams[0]["status"] == .string("idle"))
        #expect(streams[0]["uri"]?["query"]?["name"] == .string("hub"))
    }

    /// The player as a stream: playing or idle, what `Stream.Control` can do now, the item's metadata.
    @Test func thePlayerIsTheStream() {
        let item = HubMediaItem(persistentID: 1, title: "T", artist: "A", albumTitle: "B", duration: 30, location: "/x")
        let playing = Snapcast.stream(HubPlayback(state: .playing, elapsed: .seconds(3), item: .media(item)))
        #expect(playing["status"] == .string("playing"))
        #expect(playing["properties"]?["canPause"] == .bool(true) && playing["properties"]?["canPlay"] == .bool(false))
        #expect(playing["properties"]?["playbackStatus"] == .string("playing") && playing["properties"]?["position"] == .int(3))
        #expect(playing["properties"]?["metadata"] == .object([("album", .string("B")), ("artist", .array([.string("A")])),
                                                                ("duration", .int(30)), ("title", .string("T"))]))
        let paused = Snapcast.stream(HubPlayback(state: .paused, elapsed: .seconds(3), item: .media(item)))
        #expect(paused["status"] == .string("idle") && paused["properties"]?["canPlay"] == .bool(true))
        let web = Snapcast.stream(HubPlayback(state: .playing, elapsed: .zero, item: .web(url: "http://r/x.mp3")))
        #expect(web["properties"]?["canSeek"] == .bool(false))
    }

    @Test func everySnapcastMethodAnswersAsSnapserverDoes() async throws {
        let hub = Hub()
        let (listener, _) = hub.api.events.subscribe()
        func pushed() -> [HubNotification] { hub.api.events.take(listener) ?? [] }
        var called = Set<String>()
        func call(_ method: String, _ params: String = "{}") async throws -> OrderedJSON {
            called.insert(method)
            return try await hub.call(method, params)
        }
        func refused(_ method: String, _ params: String) async throws -> (code: Int, message: String, data: String) {
            called.insert(method)
            let answer = try #require(await hub.send(#"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":\#(params)}"#))
            let e = try OrderedJSON.parse(Array(answer.utf8))["error"]
            guard case let .int(code)? = e?["code"], case let .string(message)? = e?["message"] else { throw TestFailure(answer) }
            if case let .string(data)? = e?["data"] { return (code, message, data) }
            return (code, message, "")
        }
        let (a, b, c) = (Self.ids[0], Self.ids[1], Self.ids[2])

        #expect(try await call("Server.GetRPCVersion") == .object([("major", .int(2)), ("minor", .int(0)), ("patch", .int(0))]))
        let status = try await call("Server.GetStatus")
        guard case let .array(groups)? = status["server"]?["groups"] else { throw TestFailure("\(status)") }
        #expect(groups.count == 3 && groups[0]["clients"]?[0]?["config"]?["volume"] == .object([("muted", .bool(false)), ("percent", .int(40))]))
        #expect(try await call("Client.GetStatus", #"{"id":"\#(c)"}"#)["client"]?["config"]?["name"] == .string("Speaker 3"))

        // A volume: 33 % is speaker volume 17, read back as 34 %; the answer and the notification say what the speaker holds.
        #expect(try await call("Client.SetVolume", #"{"id":"\#(a)","volume":{"percent":33,"muted":false}}"#)
                == .object([("volume", .object([("muted", .bool(false)), ("percent", .int(34))]))]))
        #expect(try await hub.speakers.devices()[0].volume == 17)
        #expect(pushed().map(\.text) == [#"{"jsonrpc":"2.0","method":"Client.OnVolumeChanged","params":{"id":"\#(a)","volume":{"muted":false,"percent":34}}}"#])
        #expect(try await call("Client.SetVolume", #"{"id":"\#(a)","volume":{"muted":true}}"#)["volume"]?["muted"] == .bool(true))
        #expect(try await hub.speakers.mutes()[34_317_244_381_360] == true)
        _ = pushed()

        #expect(try await call("Client.SetName", #"{"id":"\#(c)","name":"Porch"}"#) == .object([("name", .string("Porch"))]))
        #expect(try await hub.speakers.devices()[2].deviceName == "Porch")
        #expect(pushed().map(\.text) == [#"{"jsonrpc":"2.0","method":"Client.OnNameChanged","params":{"id":"\#(c)","name":"Porch"}}"#])
        #expect(try await call("Client.SetLatency", #"{"id":"\#(a)","latency":0}"#) == .object([("latency", .int(0))]))
        let latency = try await refused("Client.SetLatency", #"{"id":"\#(a)","latency":20}"#)
        #expect(latency.code == -32603 && latency.message == "Internal error" && latency.data.contains("no latency setting"))

        // Groups: a speaker on its own is a group; muting the group mutes each member.
        let solo = "speaker-" + b
        #expect(try await call("Group.GetStatus", #"{"id":"\#(solo)"}"#)["group"]?["clients"]?[0]?["id"] == .string(b))
        #expect(try await call("Group.SetMute", #"{"id":"\#(solo)","mute":true}"#) == .object([("mute", .bool(true))]))
        #expect(try await hub.speakers.mutes()[34_317_244_381_361] == true)
        #expect(pushed().map(\.method) == ["Group.OnMute", "Client.OnVolumeChanged"])
        #expect(try await call("Group.SetStream", #"{"id":"\#(solo)","stream_id":"hub"}"#) == .object([("stream_id", .string("hub"))]))
        #expect(pushed().map(\.text) == [#"{"jsonrpc":"2.0","method":"Group.OnStreamChanged","params":{"id":"\#(solo)","stream_id":"hub"}}"#])
        // Its clients: it becomes a named group (after the speaker) holding both.
        let grown = try await call("Group.SetClients", #"{"id":"\#(solo)","clients":["\#(b)","\#(c)"]}"#)
        guard case let .array(after)? = grown["server"]?["groups"] else { throw TestFailure("\(grown)") }
        #expect(after.count == 2 && after[1]["name"] == .string("Kitchen \"<&>\"\u{1}") && after[1]["id"] == .string(b), "\(grown)")
        #expect(pushed().map(\.method).contains("Server.OnUpdate"))
        // A list of exactly 64 ids is taken (a repeated id counts once: the same two members), 65 are refused (issue 31
        // §5: a limit of 63 survived the suite).
        let sixtyFour = (0..<32).flatMap { _ in [#""\#(b)""#, #""\#(c)""#] }.joined(separator: ",")
        _ = try await call("Group.SetClients", #"{"id":"\#(b)","clients":[\#(sixtyFour)]}"#)
        #expect(try await hub.speakers.devices().map(\.groupID).filter { $0 != 0 }.count == 2)
        _ = pushed()
        let tooMany = try await refused("Group.SetClients", #"{"id":"\#(b)","clients":[\#(sixtyFour),"\#(b)"]}"#)
        #expect(tooMany.code == HubRPCError.invalidParams && tooMany.data.contains("at most 64"), "\(tooMany)")
        #expect(try await call("Group.SetName", #"{"id":"\#(b)","name":"upstairs"}"#) == .object([("name", .string("upstairs"))]))
        #expect(try await hub.speakers.devices().map(\.groupName) == ["harman", "upstairs", "upstairs"])
        #expect(pushed().map(\.method) == ["Group.OnChanged", "Group.OnNameChanged", "Server.OnUpdate"])
        _ = try await call("Group.SetName", #"{"id":"\#(b)","name":""}"#)
        #expect(try await hub.speakers.devices().allSatisfy { $0.groupID == 0 }, "no name: the speakers are on their own again")

        // The stream: Stream.Control drives the player.
        _ = try await hub.call("Player.Play", #"{"media":"\#(Self.song)","party":true}"#)
        _ = pushed()
        #expect(try await call("Stream.Control", #"{"id":"hub","command":"pause"}"#) == .string("ok"))
        #expect(await hub.player.playback().state == .paused)
        #expect(pushed().map(\.method).contains("Stream.OnUpdate"))
        #expect(try await call("Stream.Control", #"{"id":"hub","command":"setPosition","params":{"position":100}}"#) == .string("ok"))
        #expect(try await call("Stream.Control", #"{"id":"hub","command":"play"}"#) == .string("ok"))
        #expect(await hub.player.playback().state == .playing)
        let next = try await refused("Stream.Control", #"{"id":"hub","command":"next"}"#)
        #expect(next.code == 4 && next.message == "Stream property canGoNext is false")
        #expect(try await refused("Stream.SetProperty", #"{"id":"hub","property":"volume","value":3}"#).code == -32603)

        // What the hub cannot do, and ids it does not know: snapserver's error, its words.
        let delete = try await refused("Server.DeleteClient", #"{"id":"\#(a)"}"#)
        #expect(delete.code == -32603 && delete.message == "Internal error" && delete.data.contains("keeps every speaker"))
        for (method, params, data) in [("Client.GetStatus", #"{"id":"nope"}"#, "Client not found"),
                                       ("Client.SetVolume", #"{"id":"7","volume":{"percent":3}}"#, "Client not found"),
                                       ("Group.GetStatus", #"{"id":"nope"}"#, "Group not found"),
                                       ("Group.SetStream", #"{"id":"speaker-\#(a)","stream_id":"nope"}"#, "Stream not found"),
                                       ("Stream.Control", #"{"id":"nope","command":"play"}"#, "Stream not found")] {
            let e = try await refused(method, params)
            #expect(e.code == -32603 && e.message == "Internal error" && e.data == data, "\(method) \(params): \(e)")
        }
        for (method, params) in [("Client.SetVolume", #"{"id":"\#(a)","volume":{"percent":101}}"#), ("Client.SetVolume", #"{"id":"\#(a)","volume":30}"#),
                                 ("Client.SetVolume", #"{"id":"\#(a)","volume":{}}"#), ("Group.SetMute", #"{"id":"speaker-\#(a)"}"#),
                                 ("Client.SetName", #"{"id":"\#(a)","name":""}"#), ("Client.GetStatus", #"{"id":7}"#)] {
            let e = try await refused(method, params)
            #expect(e.code == -32602 && e.message == "Invalid params" && !e.data.isEmpty, "\(method) \(params): \(e)")
        }
        #expect(called == HubAPI.snapcastMethods, "not called: \(HubAPI.snapcastMethods.subtracting(called))")
    }

    /// A speaker that is lost and comes back: `Client.OnDisconnect` and `Client.OnConnect` carry the client as
    /// Snapcast's do (`{"client","id"}`).
    @Test func connectAndDisconnectCarryTheClient() async throws {
        let hub = Hub()
        let (listener, _) = hub.api.events.subscribe()
        await hub.api.speakerLeft(34_317_244_381_361, reason: "off")
        await hub.api.speakerJoined(34_317_244_381_361)
        let pushed = hub.api.events.take(listener) ?? []
        #expect(pushed.map(\.method) == ["Client.OnDisconnect", "Client.OnConnect"])
        for n in pushed {
            guard case let .object(fields) = n.params else { throw TestFailure(n.text) }
            #expect(fields.map(\.0) == ["client", "id"] && n.params["client"]?["id"] == .string(Self.ids[1]), "\(n.text)")
        }
    }
}
