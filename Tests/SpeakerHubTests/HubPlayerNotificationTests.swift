import OrderedJSON
import Foundation
import Speaker
import SpeakerHub
import SpeakerHubCore
import SpeakerSession
import Synchronization
import TestSupport
import Testing

/// Speakers whose reports (`changes()`) the test makes, one at a time.
actor ReportingSpeakers: HubSpeakers {
    nonisolated let reports: AsyncStream<HubSpeakerChange>
    nonisolated let report: AsyncStream<HubSpeakerChange>.Continuation
    private let list: [HubDevice] = (1...2).map { k in
        HubDevice(deviceID: UInt64(k), deviceName: "Speaker \(k)", groupID: 0, groupName: "harman", modelName: "Omni Adapt",
                  ipAddress: "127.0.0.1", port: 45454 + k, macAddress: "b0:38:29:1b:36:1\(k)", volume: 20, active: true,
                  wifiSignalStrength: -47, role: 21, version: "0.1.6.2", isPlaying: false)
    }

    init() { (reports, report) = AsyncStream<HubSpeakerChange>.makeStream() }

    func devices() async throws -> [HubDevice] { list }
    func changes() async -> AsyncStream<HubSpeakerChange> { reports }
    func sessionMembers() async -> [UInt64] { [1, 2] }
    func addToSession(_ id: UInt64) async throws {}
    func removeFromSession(_ id: UInt64) async throws {}
    func setVolume(_ volume: Int, of id: UInt64?) async throws {}
}

/// What the hub pushes of the player and of speakers that come back (issue 30).
@Suite("Hub: the player's interruptions and the speakers' returns")
struct HubPlayerNotificationTests {
    /// A speaker of the playback stream that comes back is reported twice — the hub reaches it again, the player
    /// rejoins it to the stream, in either order — and is announced once (`Client.OnConnect`); a later play's join is
    /// announced again, and so is a return while nothing plays (no player rejoins it).
    @Test func aSpeakerOfTheStreamThatComesBackIsAnnouncedConnectedOnce() async throws {
        try await withTimeLimit {
            let speakers = ReportingSpeakers()
            let player = ModelPlayer(now: { .zero })
            let api = HubAPI(speakers: speakers, player: player, media: ModelMedia(), now: { .zero })
            let log = NotificationLog(api.events)
            let follower = api.followSpeakers()
            defer { follower.cancel(); log.stop() }
            let item = try #require(try await ModelMedia().items().first)
            try await player.play(.media(item), from: .zero, on: [1, 2])
            let connects = { log.of("Client.OnConnect").filter { $0["id"] == .string("2") }.count }
            var marker = 0
            /// Everything the hub published before this is in the log: a volume report, pushed after the others.
            func settled() async throws {
                marker += 1
                let level = marker
                speakers.report.yield(.volume(id: 1, level: level, muted: false))
                try await waitUntil("the marker \(level)") { log.of("Client.OnVolumeChanged").contains { $0["volume"]?["percent"] == .int(2 * level) } }
            }
            func lose() async throws {
                let before = log.of("Client.OnDisconnect").count
                speakers.report.yield(.lost(id: 2, reason: "off (test)"))
                try await waitUntil("the loss") { log.of("Client.OnDisconnect").count == before + 1 }
            }

            // The hub reaches it first, then the player rejoins it.
            try await lose()
            speakers.report.yield(.connected(id: 2))
            try await settled()
            await api.speakerJoined(2)
            try await settled()
            #expect(connects() == 1)

            // The player rejoins it first, then the hub reaches it.
            try await lose()
            await api.speakerJoined(2)
            speakers.report.yield(.connected(id: 2))
            try await settled()
            #expect(connects() == 2)

            // A later play's join is announced.
            await api.speakerJoined(2)
            try await settled()
            #expect(connects() == 3)

            // Nothing plays: the hub reaching it is its return, and the next play's join is announced too.
            try await player.stop()
            try await lose()
            speakers.report.yield(.connected(id: 2))
            try await settled()
            #expect(connects() == 4)
            try await player.play(.media(item), from: .zero, on: [1, 2])
            await api.speakerJoined(2)
            try await settled()
            #expect(connects() == 5)
        }
    }

    /// The same with simulated speakers and the streaming player: a speaker of the stream switched off and on is
    /// reached again by the hub (on its manual clock) and rejoined by the player (real time), and announced once.
    @Test func aStreamingSpeakerSwitchedOffAndOnIsAnnouncedConnectedOnce() async throws {
        try await withHub(speakers: 2, streaming: true) { hub in
            let log = NotificationLog(hub.api.events)
            let follower = HubRPCServer.follow(hub.controller, into: hub.api)
            let playerEvents = try await hub.controller.playerEvents()
            let joins = Mutex<[UInt64]>([])
            let watcher = Task { for await e in playerEvents { if case let .speakerJoined(id) = e { joins.withLock { $0.append(id) } } } }
            defer { follower.cancel(); watcher.cancel(); log.stop() }
            let s = "SessionID=\(try await hub.session())"
            #expect(try await hub.get("/v1/set_party_mode?\(s)").status == 200)
            let play = try await hub.get("/v1/play_hub_media?\(s)&PersistentID=\(MediaInfo.persistentID(of: "a-song.wav"))")
            #expect(play.status == 200, "\(play.body)")
            let id = hub.ids[1]
            let mine: (OrderedJSON) -> Bool = { $0["id"] == .string(String(id)) }
            try await waitUntil("the speaker gets the stream") { joins.withLock { $0.contains(id) } }
            joins.withLock { $0 = [] }

            await hub.sim.speakers[1].powerOff()
            try await waitUntil("the hub notices the speaker is off") { log.of("Client.OnDisconnect").contains(where: mine) }
            let before = log.of("Client.OnConnect").filter(mine).count
            hub.sim.speakers[1].powerOn()
            try await waitUntil("the hub reaches it and the player rejoins it") {
                if hub.clock.pendingSleeps > 0 { hub.clock.advance(by: .seconds(1)) }
                let reached = try await hub.speakers.devices().first { $0.deviceID == id }?.connected == true
                return reached && joins.withLock { $0.contains(id) }
            }
            // Everything both reported is announced: the player's pause (its own event, after the rejoin) and a
            // volume another controller set (the speakers' report, after the return) are in the log.
            try await hub.controller.pause()
            try await waitUntil("the player's pause") {
                log.of("Player.OnStateChanged").contains { $0["state"] == .string("paused") }
            }
            let parts = hub.sim.endpoints[0].split(separator: ":")
            let other = try await SpeakerSession.connect(host: String(parts[0]), port: UInt16(parts[1])!)
            try await other.setVolume(33)
            await other.close()
            try await waitUntil("the volume report") { log.of("Client.OnVolumeChanged").contains { $0["volume"]?["percent"] == .int(66) } }
            #expect(log.of("Client.OnConnect").filter(mine).count == before + 1, "\(log.all.map(\.method))")
        }
    }

    /// Another controller takes the stream over (it plays its own on the hub's only speaker): the hub's clients get
    /// `Player.OnInterrupted` with the reason, then the state (stopped) — not an end.
    @Test func aPlaybackTakenOverIsPushedAsInterrupted() async throws {
        try await withHub(speakers: 1, streaming: true) { hub in
            let log = NotificationLog(hub.api.events)
            let follower = HubRPCServer.follow(hub.controller, into: hub.api)
            defer { follower.cancel(); log.stop() }
            try await Self.playOnTheOnlySpeaker(hub)

            let parts = hub.sim.endpoints[0].split(separator: ":")
            let other = try await SpeakerSession.connect(host: String(parts[0]), port: UInt16(parts[1])!)
            try await other.joinSession()
            try await other.setClockMap(ClockMap(controllerReference: 1_000_000_000, speakerReference: 1_000_000_000, rate: 0))
            try await other.play(streamId: 0x1_0000, format: .cd, source: .localFile, title: "another controller")
            let (all, interrupted) = try await Self.interruptionAheadOfTheStop(log)
            #expect(all[interrupted].params["reason"] == .string("takenOver"), "\(all[interrupted].params)")
            guard case let .string(message)? = all[interrupted].params["message"] else { throw TestFailure("\(all[interrupted].params)") }
            #expect(message.contains("another controller"), "\(message)")
            #expect(all.filter { $0.method == "Player.OnInterrupted" }.count == 1)
            await other.close()
        }
    }

    /// The only speaker switched off: the player waits for it (`PlayerOptions.lostTimeout`, real time), then stops;
    /// the clients get `Player.OnInterrupted` with `speakersLost`, then the stopped state.
    @Test func aPlaybackThatLostEverySpeakerIsPushedAsInterrupted() async throws {
        try await withHub(speakers: 1, streaming: true) { hub in
            let log = NotificationLog(hub.api.events)
            let follower = HubRPCServer.follow(hub.controller, into: hub.api)
            defer { follower.cancel(); log.stop() }
            try await Self.playOnTheOnlySpeaker(hub)
            await hub.sim.speakers[0].powerOff()
            let (all, interrupted) = try await Self.interruptionAheadOfTheStop(log)
            #expect(all[interrupted].params["reason"] == .string("speakersLost"), "\(all[interrupted].params)")
        }
    }

    /// Party mode and a play of the hub's song on its only speaker, until the speaker plays.
    static func playOnTheOnlySpeaker(_ hub: HubFixture) async throws {
        let s = "SessionID=\(try await hub.session())"
        #expect(try await hub.get("/v1/set_party_mode?\(s)").status == 200)
        let play = try await hub.get("/v1/play_hub_media?\(s)&PersistentID=\(MediaInfo.persistentID(of: "a-song.wav"))")
        #expect(play.status == 200, "\(play.body)")
        try await waitUntil("the speaker plays") { hub.sim.speakers[0].deviceInfo.isPlaying }
    }

    /// Waits for the player's stopped state; the notifications so far and the index of the one
    /// `Player.OnInterrupted`, which came ahead of it.
    static func interruptionAheadOfTheStop(_ log: NotificationLog) async throws -> (all: [HubNotification], interrupted: Int) {
        let stopped: (HubNotification) -> Bool = { $0.method == "Player.OnStateChanged" && $0.params["state"] == .string("stopped") }
        try await waitUntil("the hub's player stops") { log.all.contains(where: stopped) }
        let all = log.all
        let interrupted = try #require(all.firstIndex { $0.method == "Player.OnInterrupted" }, "\(all.map(\.method))")
        #expect(interrupted < all.firstIndex(where: stopped)!, "announced ahead of the state")
        return (all, interrupted)
    }
}
