import Simulator
import SpeakerSession
import SpeakerSimulator
import TestSupport
import Testing
import Transport

@Suite("SpeakerSession against a simulated speaker")
struct SpeakerSessionTests {
    @Test func helloGivesIdentityAndDeviceInfoHasEverySeedField() async throws {
        let sim = try InProcessSpeaker()
        let session = try await sim.session()
        let identity = SpeakerIdentity.simulated(index: 0, seed: 7)
        #expect(session.hello.deviceId == identity.deviceId)
        // Both speak 1...4, but version 4 (clock sync over UDP) needs a clock socket, which a speaker on an in-memory
        // link has not: 3 (version 2: lost-packet recovery; 3: FLAC audio).
        #expect(session.hello.version == 3)
        #expect(session.hello.modelName.value == identity.modelName)
        let info = try await session.deviceInfo()
        #expect(info.deviceId == identity.deviceId)
        #expect(info.deviceName.value == "Speaker 1")
        #expect(info.groupId == 0 && info.groupName.value == "harman")
        #expect(info.modelName.value == identity.modelName)
        #expect(info.ipAddress.value == "127.0.0.1" && info.port == 45455)
        #expect(info.macAddress == identity.macAddress)
        #expect(info.volume.value == 25 && !info.active && !info.isPlaying && !info.isMaster)
        #expect(info.wifiSignalStrength == identity.wifiSignalStrength)
        #expect(info.version.value == "0.1.6.2" && info.balance.value == 0 && info.channelType == 1 && info.role == 0)
        let status = try await session.status()
        #expect(status.state == .initialized && !status.muted)
        await session.close()
        await sim.server.shutdown()
    }

    @Test func settersChangeDeviceInfoAndPushEvents() async throws {
        let sim = try InProcessSpeaker()
        let session = try await sim.session()
        let log = await EventLog(session)
        let id = session.deviceId
        try await session.setVolume(30)
        try await log.waitFor(.volumeChanged(deviceId: id, volume: 30, muted: false))
        try await session.mute()
        try await log.waitFor(.volumeChanged(deviceId: id, volume: 30, muted: true))
        #expect(try await session.status().muted)
        try await session.unmute()
        try await log.waitFor(.volumeChanged(deviceId: id, volume: 30, muted: false))
        #expect(try await session.deviceInfo().volume.value == 30)
        #expect(try await session.status().muted == false)
        try await session.setBalance(-3)
        try await log.waitFor(.deviceStateUpdated(deviceId: id, reason: .balanceChanged))
        try await session.setRole(21)
        try await log.waitFor(.deviceStateUpdated(deviceId: id, reason: .roleChanged))
        try await session.setChannelType(2)
        try await log.waitFor(.deviceStateUpdated(deviceId: id, reason: .channelTypeChanged))
        try await session.setName("Kitchen")
        try await log.waitFor(.deviceStateUpdated(deviceId: id, reason: .nameChanged))
        try await session.joinGroup(id: id, name: "Living Room")
        try await log.waitFor(.deviceStateUpdated(deviceId: id, reason: .groupChanged))
        var info = try await session.deviceInfo()
        #expect(info.volume.value == 30 && info.balance.value == -3 && info.role == 21 && info.channelType == 2)
        #expect(info.deviceName.value == "Kitchen" && info.groupId == id && info.groupName.value == "Living Room" && info.isMaster)
        try await session.leaveGroup()
        info = try await session.deviceInfo()
        #expect(info.groupId == 0 && info.groupName.value == "harman" && !info.isMaster)
        try await session.joinSession()
        try await log.waitFor(.deviceStateUpdated(deviceId: id, reason: .sessionChanged))
        #expect(try await session.deviceInfo().active)
        try await session.leaveSession()
        #expect(try await session.deviceInfo().active == false)
        await session.close()
        await sim.server.shutdown()
    }

    @Test func outOfRangeValuesAreRefusedBeforeAnythingIsSent() async throws {
        let sim = try InProcessSpeaker()
        let session = try await sim.session()
        let before = await session.core.statistics.requests
        for volume in [-1, 51, 1000] {
            let e = await #expect(throws: SpeakerSessionError.self) { try await session.setVolume(volume) }
            #expect(e?.code == .invalidArgument)
            #expect(e?.category == .usage)
        }
        for balance in [-7, 7] {
            let e = await #expect(throws: SpeakerSessionError.self) { try await session.setBalance(balance) }
            #expect(e?.code == .invalidArgument)
        }
        let empty = await #expect(throws: SpeakerSessionError.self) { try await session.setName("") }
        #expect(empty?.code == .invalidArgument)
        let long = await #expect(throws: SpeakerSessionError.self) { try await session.setName(String(repeating: "x", count: 256)) }
        #expect(long?.code == .invalidArgument)
        let group = await #expect(throws: SpeakerSessionError.self) { try await session.joinGroup(id: 0, name: "A") }
        #expect(group?.code == .invalidArgument)
        #expect(await session.core.statistics.requests == before)
        #expect(try await session.deviceInfo().volume.value == 25)
        await session.close()
        await sim.server.shutdown()
    }

    @Test func renamingWhilePlayingInterruptsPlayback() async throws {
        let sim = try InProcessSpeaker()
        let session = try await sim.session()
        let log = await EventLog(session)
        sim.speaker.setPlaying(true, streamId: 9)
        try await log.waitFor(.playbackStateChanged(streamId: 9, state: .playing))
        #expect(try await session.deviceInfo().isPlaying)
        try await session.setName("Bathroom")
        try await log.waitFor(.error(deviceId: session.deviceId, code: .playbackInterrupted, message: "renamed while playing"))
        try await log.waitFor(.playbackStateChanged(streamId: 9, state: .stopped))
        let info = try await session.deviceInfo()
        #expect(!info.isPlaying && info.deviceName.value == "Bathroom")
        await session.close()
        await sim.server.shutdown()
    }

    @Test func playOutsideTheSessionIsRefusedWithItsCode() async throws {
        let sim = try InProcessSpeaker()
        let link = try sim.link()
        let session = try await SpeakerSession.open(transport: link)
        // No typed play yet (playback comes later): send it raw through the core.
        let play = try PlayRequest(streamId: 3, format: .cd, source: .localFile, title: "a.wav")
        let reply = try await session.core.request(try ControlPacket(requestId: 99, message: .play(play)))
        guard case let .failed(f) = reply.message else { Issue.record("expected failed, got \(reply.message)"); return }
        #expect(f.code == .notInSession)
        await session.close()
        await sim.server.shutdown()
    }

    @Test func requestsBeforeHelloAndVersionMismatchAreRefused() async throws {
        let sim = try InProcessSpeaker()
        // A raw core without the hello, on a clock that never moves: a slow reply is never retransmitted (a second
        // hello after the mismatch would find the link closed).
        let core = RequestSession(transport: try sim.link(), definition: SpeakerProtocol(), options: RequestOptions(), clock: ManualClock())
        let reply = try await core.request(try ControlPacket(requestId: 1, message: .getDeviceInfo))
        guard case let .failed(f) = reply.message else { Issue.record("expected failed, got \(reply.message)"); return }
        #expect(f.code == .helloRequired && f.request == .getDeviceInfo)
        let hello = try Hello(minVersion: 4, maxVersion: 5, controllerName: "future")
        let refused = try await core.request(try ControlPacket(requestId: 2, message: .hello(hello)))
        guard case let .failed(g) = refused.message else { Issue.record("expected failed, got \(refused.message)"); return }
        #expect(g.code == .versionMismatch)
        // The speaker closed the link after the mismatch.
        try await waitUntil("the link to close") { await !core.isOpen }
        await core.close()
        await sim.server.shutdown()
    }

    /// A version-1 speaker (no lost-packet recovery) and this controller (1...2) agree on version 1: it still plays,
    /// and never gets a version-2 frame.
    @Test func aVersion1SpeakerIsSpokenToInVersion1() async throws {
        let speaker = SimulatedSpeaker(.init(identity: .simulated(index: 0), versions: 1...1))
        let server = try SimulatedDeviceServer(devices: [speaker])
        let (a, b) = InMemoryTransport.pair()
        try server.serve(link: b, onDevice: 0)
        let session = try await SpeakerSession.open(transport: a, address: "old")
        #expect(session.hello.version == 1)
        try await session.joinSession()
        #expect(try await session.status().state != .playing)
        await session.close()
        await server.shutdown()
    }

    @Test func aSpeakerWithNoCommonVersionIsRefusedAtHello() async throws {
        try await withTimeLimit {
            // Versions beyond this controller's (1...4): no version in common.
            let next = SpeakerProtocolVersion.supported.upperBound + 1
            let speaker = SimulatedSpeaker(.init(identity: .simulated(index: 0), versions: next...(next + 1)))
            let server = try SimulatedDeviceServer(devices: [speaker])
            let (a, b) = InMemoryTransport.pair()
            try server.serve(link: b, onDevice: 0)
            // On a manual clock: the refusal is the subject, not the hello's timeout (a loaded machine ran into it once).
            let e = await #expect(throws: SpeakerSessionError.self) {
                try await SpeakerSession.open(transport: a, address: "future", clock: ManualClock())
            }
            #expect(e?.code == .versionMismatch && e?.category == .device)
            #expect(e?.message.contains("future") == true)
            await server.shutdown()
        }
    }

    @Test func eventsReachEveryControllerOverTCP() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 1)
            let (host, port) = endpoints(sim)[0]
            let one = try await SpeakerSession.connect(host: host, port: port)
            let two = try await SpeakerSession.connect(host: host, port: port)
            let log = await EventLog(two)
            try await one.setVolume(44)
            try await log.waitFor(.volumeChanged(deviceId: one.deviceId, volume: 44, muted: false))
            try await one.setName("Porch")
            try await log.waitFor(.deviceStateUpdated(deviceId: one.deviceId, reason: .nameChanged))
            #expect(try await two.deviceInfo().deviceName.value == "Porch")
            await one.close()
            await two.close()
            await sim.shutdown()
        }
    }

    @Test func aSpeakerThatStopsAnsweringTimesOutWithOneLine() async throws {
        let (a, silent) = InMemoryTransport.pair()
        let e = await #expect(throws: SpeakerSessionError.self) {
            try await SpeakerSession.open(transport: a, address: "silent", options: RequestOptions(timeout: .milliseconds(50), retransmissions: 0))
        }
        await silent.close()
        #expect(e?.code == .timeout)
        #expect(e?.message.contains("hello") == true)
    }

    @Test func unreachableSpeakerIsAConnectionError() async throws {
        let listener = try await TCPListener.bind()
        guard case let .tcp(_, port) = listener.boundAddress else { throw TestFailure("not a TCP address: \(listener.boundAddress)") }
        listener.close()
        let e = await #expect(throws: SpeakerSessionError.self) { try await SpeakerSession.connect(host: "127.0.0.1", port: port) }
        #expect(e?.code == .connectionFailed && e?.category == .connection)
        #expect(e?.message.contains("127.0.0.1:\(port)") == true)
    }
}
