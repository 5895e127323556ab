import OrderedJSON
import Foundation
import SpeakerHub
import SpeakerHubCore
import SpeakerSession
import SpeakerSimulator
import Synchronization
import TestSupport
import Testing

/// A hub notifications recorder: everything `api.events` publishes from now on.
final class NotificationLog: Sendable {
    final class Store: Sendable {
        let list = Mutex<[HubNotification]>([])
    }

    private let store = Store()
    private let task: Task<Void, Never>

    init(_ events: HubEvents) {
        let (id, wakeups) = events.subscribe()
        let store = store
        task = Task {
            for await _ in wakeups {
                guard let taken = events.take(id) else { break }
                store.list.withLock { $0 += taken }
            }
        }
    }

    /// Everything recorded, in order.
    var all: [HubNotification] { store.list.withLock { $0 } }

    func of(_ method: String) -> [OrderedJSON] { store.list.withLock { $0.filter { $0.method == method }.map(\.params) } }

    func stop() { task.cancel() }
}

/// The hub with one speaker of several off (issue 30, item 7): the others stay listed and play, the one off is listed
/// unavailable (JSON-RPC `connected` false) and comes back by itself, reconnected after a back-off on the hub's clock.
/// And a volume set by another controller is pushed (item 10).
@Suite("Hub: speakers that go away and come back")
struct HubSpeakerAvailabilityTests {
    @Test func aSpeakerOffLeavesTheOthersUsableAndComesBackByItself() async throws {
        try await withHub(speakers: 3) { hub in
            let log = NotificationLog(hub.api.events)
            defer { log.stop() }
            let sid = try await hub.session()
            #expect(try await hub.get("/v1/device_count?SessionID=\(sid)").string("DeviceCount") == "3")
            let off = hub.ids[2], live = [hub.ids[0], hub.ids[1]]
            await hub.sim.speakers[2].powerOff()
            // The end of its link is noticed without any request.
            try await waitUntil("the hub notices the speaker is off") {
                log.of("Client.OnDisconnect").contains { $0["id"] == .string(String(off)) }
            }

            let count = try await hub.get("/v1/device_count?SessionID=\(sid)")
            #expect(count.status == 200, "\(count.body)")
            #expect(try count.string("DeviceCount") == "2")
            let list = try await hub.get("/v1/device_list?SessionID=\(sid)")
            #expect(list.status == 200, "\(list.body)")
            let listed = (try list.object()["DeviceList"] as? [[String: Any]] ?? []).compactMap { $0["DeviceID"] as? String }
            #expect(listed == live.map { String($0) })

            let status = try OrderedJSON.parse(Array(try await httpPost(hub.port, "/jsonrpc", #"{"jsonrpc":"2.0","id":1,"method":"Server.GetStatus"}"#).body.utf8))
            guard case let .array(groups)? = status["result"]?["server"]?["groups"] else { throw TestFailure("\(status)") }
            let clients = groups.flatMap { g -> [OrderedJSON] in if case let .array(c)? = g["clients"] { c } else { [] } }
            #expect(clients.count == 3)
            #expect(clients.map { $0["connected"] } == [.bool(true), .bool(true), .bool(false)])
            // `lastSeen` is the wall-clock time (Unix time) it was last heard: the fixture's wall clock at the start.
            #expect(clients[2]["id"] == .string(String(off)))
            #expect(clients[2]["lastSeen"] == .object([("sec", .int(1_767_225_600)), ("usec", .int(0))]), "\(clients[2])")

            let pid = MediaInfo.persistentID(of: "a-song.wav")
            let play = try await hub.get("/v1/play_hub_media_selected_speakers?SessionID=\(sid)&PersistentID=\(pid)&DeviceIDList=\(live[0]),\(live[1])")
            #expect(play.status == 200, "\(play.body)")
            let onOff = try await hub.get("/v1/play_hub_media_selected_speakers?SessionID=\(sid)&PersistentID=\(pid)&DeviceIDList=\(off)")
            #expect(onOff.status == 502 && onOff.body.contains("unavailable"), "\(onOff.body)")

            let page = try await hub.get("/")
            #expect(page.body.components(separatedBy: "<tr class=\"speaker\"").count == 3, "two speakers listed available")
            #expect(page.body.contains("<tr class=\"speaker unavailable\" data-device-id=\"\(off)\">"))

            // Back on: reconnected after the back-off's waits on the hub's (manual) clock, nothing else asked.
            hub.sim.speakers[2].powerOn()
            try await waitUntil("the speaker is reconnected") {
                if hub.clock.pendingSleeps > 0 { hub.clock.advance(by: .seconds(1)) }
                return log.of("Client.OnConnect").contains { $0["id"] == .string(String(off)) }
            }
            let again = try await hub.get("/v1/device_count?SessionID=\(sid)")
            #expect(try again.string("DeviceCount") == "3", "\(again.body)")
            let volume = try await hub.get("/v1/set_volume_device?SessionID=\(sid)&DeviceID=\(off)&Volume=12")
            #expect(volume.status == 200, "\(volume.body)")
            #expect(hub.sim.speakers[2].deviceInfo.volume.value == 12)
        }
    }

    /// A speaker that left the playback session while it was off is not in it when it is back.
    @Test func aSpeakerRemovedWhileOffIsOutOfTheSessionWhenBack() async throws {
        try await withHub(speakers: 2) { hub in
            let log = NotificationLog(hub.api.events)
            defer { log.stop() }
            let sid = try await hub.session()
            #expect(try await hub.get("/v1/set_party_mode?SessionID=\(sid)").status == 200)
            await hub.sim.speakers[1].powerOff()
            try await waitUntil("the hub notices the speaker is off") { !log.of("Client.OnDisconnect").isEmpty }
            let removed = try await hub.get("/v1/remove_device_from_session?SessionID=\(sid)&DeviceID=\(hub.ids[1])")
            #expect(removed.status == 200, "\(removed.body)")
            #expect(await hub.speakers.sessionMembers() == [hub.ids[0]])
            hub.sim.speakers[1].powerOn()
            try await waitUntil("the speaker is reconnected") {
                if hub.clock.pendingSleeps > 0 { hub.clock.advance(by: .seconds(1)) }
                return !log.of("Client.OnConnect").isEmpty
            }
            #expect(await hub.controller.sessionMembers == [hub.ids[0]])
            #expect(try await hub.get("/v1/add_device_to_session?SessionID=\(sid)&DeviceID=\(hub.ids[1])").status == 200)
            #expect(await hub.speakers.sessionMembers() == hub.ids)
        }
    }

    /// A speaker named but off when the hub starts does not stop it: the others are served, and it joins the list
    /// (and the controller) when it first answers, looked for after the same waits on the hub's clock.
    @Test func aSpeakerOffWhenTheHubStartsJoinsWhenItComesOn() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 2)
            await sim.speakers[1].powerOff()
            let endpoints = sim.endpoints.map { e -> (host: String, port: UInt16) in
                let parts = e.split(separator: ":")
                return (String(parts[0]), UInt16(parts[1])!)
            }
            let (controller, unreached) = try await ControllerSpeakers.open(endpoints, endpoint: { $0 }) {
                try await SpeakerSession.connect(host: $0.host, port: $0.port)
            }
            #expect(unreached.map(\.port) == [endpoints[1].port])
            let clock = ManualClock()
            let speakers = ControllerSpeakers(controller, unreached: unreached.map { ($0.host, $0.port) }, now: { clock.now.offset },
                                              sleep: { try await clock.sleep(for: $0) })
            let changes = await speakers.changes()
            let connected = Task { for await change in changes { if case .connected = change { return true } }; return false }
            #expect(try await speakers.devices().map(\.deviceID) == [sim.speakers[0].deviceId])
            #expect(clock.nextDeadline == .seconds(1), "the first look is a second after the start")
            sim.speakers[1].powerOn()
            try await waitUntil("the speaker is found") {
                if clock.pendingSleeps > 0 { clock.advance(by: .seconds(1)) }
                return try await speakers.devices().count == 2
            }
            #expect(await connected.value)
            #expect(try await speakers.devices().map(\.deviceID) == sim.speakers.map(\.deviceId))
            try await speakers.addToSession(sim.speakers[1].deviceId)
            #expect(await controller.sessionMembers == [sim.speakers[1].deviceId])
            await speakers.close()
            await controller.close()

            // None answering is the failure it was.
            await sim.speakers[0].powerOff()
            await sim.speakers[1].powerOff()
            await #expect(throws: SpeakerSessionError.self) {
                _ = try await ControllerSpeakers.open(endpoints, endpoint: { $0 }) { try await SpeakerSession.connect(host: $0.host, port: $0.port) }
            }
            await sim.shutdown()
        }
    }

    /// The waits between attempts to reach a lost speaker: 1 s, then twice as long each time, at most the limit.
    @Test func reconnectionBacksOffOnTheHubsClock() async throws {
        #expect((0..<7).map { HubBackoff().delay(beforeAttempt: $0) } == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 1)
            let parts = sim.endpoints[0].split(separator: ":")
            let controller = try await SpeakerController.connect([(String(parts[0]), UInt16(parts[1])!)])
            let clock = ManualClock()
            let attempts = Mutex<[Duration]>([])
            let speakers = ControllerSpeakers(controller, now: { clock.now.offset }, sleep: { try await clock.sleep(for: $0) },
                                              connect: { host, port in
                                                  let n = attempts.withLock { $0.append(clock.now.offset); return $0.count }
                                                  if n < 4 { throw SpeakerSessionError(.connectionFailed, "refused (test)") }
                                                  return try await SpeakerSession.connect(host: host, port: port)
                                              })
            #expect(try await speakers.devices().map(\.connected) == [true])
            await sim.speakers[0].powerOff()
            try await waitUntil("the loss is noticed") { clock.pendingSleeps == 1 }
            #expect(try await speakers.devices().map(\.connected) == [false])
            // Each attempt's wait is registered on the clock; advancing to it makes the next attempt.
            for (k, expected) in [1, 3, 7, 15].enumerated() {
                #expect(clock.nextDeadline == .seconds(expected), "attempt \(k + 1)")
                if k == 3 { sim.speakers[0].powerOn() }
                clock.advance(by: clock.nextDeadline! - clock.now.offset)
                try await waitUntil("attempt \(k + 1)") { attempts.withLock { $0.count } == k + 1 }
                if k < 3 { try await waitUntil("the next wait") { clock.pendingSleeps == 1 } }
            }
            try await waitUntil("the speaker is back") { try await speakers.devices().map(\.connected) == [true] }
            #expect(attempts.withLock { $0 } == [1, 3, 7, 15].map { Duration.seconds($0) })
            await speakers.close()
            await controller.close()
            await sim.shutdown()
        }
    }

    /// A volume set by another controller (`tuneup speaker volume 41`) is pushed as `Client.OnVolumeChanged` (the
    /// speaker's own event); the hub's own change is pushed once.
    @Test func aVolumeSetByAnotherControllerIsPushed() async throws {
        try await withHub(speakers: 2) { hub in
            let log = NotificationLog(hub.api.events)
            defer { log.stop() }
            let sid = try await hub.session()
            #expect(try await hub.get("/v1/device_count?SessionID=\(sid)").status == 200)  // the hub follows the speakers
            let parts = hub.sim.endpoints[1].split(separator: ":")
            let other = try await SpeakerSession.connect(host: String(parts[0]), port: UInt16(parts[1])!)
            try await other.setVolume(41)
            await other.close()
            let expected: OrderedJSON = .object([("id", .string(String(hub.ids[1]))), ("volume", .object([("muted", .bool(false)), ("percent", .int(82))]))])
            try await waitUntil("the volume notification") { log.of("Client.OnVolumeChanged").contains(expected) }

            #expect(try await hub.get("/v1/set_volume_device?SessionID=\(sid)&DeviceID=\(hub.ids[0])&Volume=9").status == 200)
            let mine: OrderedJSON = .object([("id", .string(String(hub.ids[0]))), ("volume", .object([("muted", .bool(false)), ("percent", .int(18))]))])
            try await waitUntil("the hub's own change") { log.of("Client.OnVolumeChanged").contains(mine) }
            // The speaker's event for the hub's own change comes too, before the event of a later change on the same
            // speaker: once that one is pushed, the hub's change was pushed once.
            let first = hub.sim.endpoints[0].split(separator: ":")
            let third = try await SpeakerSession.connect(host: String(first[0]), port: UInt16(first[1])!)
            try await third.setVolume(42)
            await third.close()
            try await waitUntil("the later change") { log.of("Client.OnVolumeChanged").contains { $0["volume"]?["percent"] == .int(84) } }
            #expect(log.of("Client.OnVolumeChanged").filter { $0 == mine }.count == 1)
        }
    }
}
