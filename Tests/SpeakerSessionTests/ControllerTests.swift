import Foundation
import Simulator
import SpeakerPlayback
import SpeakerSession
import SpeakerSimulator
import Support
import TestSupport
import Testing
import Transport

func endpoints(_ sim: SpeakerSimulation) -> [(host: String, port: UInt16)] {
    sim.endpoints.map { e in
        let parts = e.split(separator: ":")
        return (String(parts[0]), UInt16(parts[1])!)
    }
}

@Suite("SpeakerController over simulated speakers on TCP")
struct ControllerTests {
    @Test func lookupsVolumeOfAllGroupsAndSessionBookkeeping() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 3)
            let c = try await SpeakerController.connect(endpoints(sim))
            let ids = sim.speakers.map(\.deviceId)
            #expect(await c.devices.map(\.deviceId) == ids)
            #expect(try await c.info(index: 2).deviceId == ids[2])
            #expect(try await c.info(id: ids[1]).deviceName.value == "Speaker 2")
            #expect(try await c.info(index: 0).port == UInt16(sim.endpoints[0].split(separator: ":")[1])!)

            try await c.setVolume(10, of: ids[0])
            try await c.setVolume(40, of: ids[1])
            #expect(await c.averageVolume == 25)
            #expect(try await c.setVolumeAll(50) == 50)
            #expect(await c.devices.allSatisfy { $0.volume.value == 50 })

            // Groups by name: the first member's id is the group's id; later members get it too.
            let gid = try await c.joinGroup(named: "Kitchen", ids: [ids[2], ids[0]])
            #expect(gid == ids[2])
            #expect(try await c.joinGroup(named: "Kitchen", ids: [ids[1]]) == ids[2])
            #expect(try await c.info(group: "Kitchen", member: 0).deviceId == ids[0])
            #expect(try await c.info(group: "Kitchen", member: 2).deviceId == ids[2])
            #expect(try await c.info(id: ids[2]).isMaster)
            try await c.leaveGroup(ids[0])
            let left = try await c.info(id: ids[0])
            #expect(left.groupName.value == "harman" && left.groupId == 0)
            #expect(await c.groups.map(\.members.count) == [2])

            try await c.addToSession(ids[1])
            try await c.addAllToSession()
            #expect(await c.sessionMembers == [ids[1], ids[0], ids[2]])
            #expect(try await c.info(id: ids[0]).active)
            try await c.removeFromSession(ids[1])
            #expect(await c.sessionMembers == [ids[0], ids[2]])
            #expect(try await c.info(id: ids[1]).active == false)

            await c.close()
            await sim.shutdown()
        }
    }

    @Test func unknownSpeakersAndBadValuesAreRefusedWithOneLine() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 2)
            let c = try await SpeakerController.connect(endpoints(sim))
            let index = await #expect(throws: SpeakerSessionError.self) { try await c.info(index: 2) }
            #expect(index?.code == .unknownDevice && index?.message == "there is no speaker 2; speakers are 0...1")
            let id = await #expect(throws: SpeakerSessionError.self) { try await c.info(id: 42) }
            #expect(id?.code == .unknownDevice)
            let group = await #expect(throws: SpeakerSessionError.self) { try await c.info(group: "Nope", member: 0) }
            #expect(group?.code == .unknownDevice)
            let volume = await #expect(throws: SpeakerSessionError.self) { try await c.setVolumeAll(51) }
            #expect(volume?.code == .invalidArgument)
            let unknownVolume = await #expect(throws: SpeakerSessionError.self) { try await c.setVolume(10, of: 42) }
            #expect(unknownVolume?.code == .unknownDevice)
            let notMember = await #expect(throws: SpeakerSessionError.self) { try await c.removeFromSession(sim.speakers[0].deviceId) }
            #expect(notMember?.code == .invalidArgument)
            #expect(await c.devices.allSatisfy { $0.volume.value == 25 })
            await c.close()
            await sim.shutdown()
        }
    }

    @Test func settingsSurviveARestart() async throws {
        try await withTimeLimit {
            let path = scratchPath("speakers.json")
            let first = try await SpeakerSimulation.start(count: 2, statePath: path)
            let c = try await SpeakerController.connect(endpoints(first))
            let ids = first.speakers.map(\.deviceId)
            try await c.setVolume(12, of: ids[1])
            try await c.rename(ids[1], to: "Den")
            try await c.joinGroup(named: "Upstairs", ids: [ids[1]])
            let s = try await c.session(id: ids[1])
            try await s.setBalance(4)
            try await s.setRole(21)
            try await s.setChannelType(3)
            await c.close()
            await first.shutdown()

            let second = try await SpeakerSimulation.start(count: 2, statePath: path)
            let d = try await SpeakerController.connect(endpoints(second))
            let info = try await d.info(index: 1)
            #expect(info.deviceId == ids[1])
            #expect(info.volume.value == 12 && info.deviceName.value == "Den" && info.groupName.value == "Upstairs" && info.groupId == ids[1])
            #expect(info.balance.value == 4 && info.role == 21 && info.channelType == 3)
            #expect(try await d.info(index: 0).volume.value == 25)
            await d.close()
            await second.shutdown()
        }
    }

    @Test func aCorruptStateFileIsOneClearError() async throws {
        let path = scratchPath("bad.json")
        try Data("not json".utf8).write(to: URL(fileURLWithPath: path))
        let e = await #expect(throws: SimulatorError.self) { try await SpeakerSimulation.start(count: 1, statePath: path) }
        #expect(e?.code == .corruptState)
        #expect(e?.message.contains(path) == true)
    }
}

@Suite("Speaker discovery on loopback")
struct DiscoveryTests {
    @Test func findsSpeakersAndReportsAddedAndRemoved() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 2, discovery: .ownPorts())
            let targets = sim.responders.map { (host: "127.0.0.1", port: $0.port) }
            let client = DiscoveryClient(targets: targets, window: .milliseconds(300))
            let found = try await client.discover()
            #expect(Set(found.map(\.deviceId)) == Set(sim.speakers.map(\.deviceId)))
            let first = try #require(found.first { $0.deviceId == sim.speakers[0].deviceId })
            #expect(first.endpoint == sim.endpoints[0] && first.deviceName == "Speaker 1" && first.protocolVersions == SpeakerProtocolVersion.supported)

            var changes = client.watch(interval: .milliseconds(400), missesBeforeRemoval: 1).makeAsyncIterator()
            var added: Set<UInt64> = []
            while added.count < 2 {
                guard case let .added(s)? = try await changes.next() else { Issue.record("expected added"); return }
                added.insert(s.deviceId)
            }
            #expect(added == Set(sim.speakers.map(\.deviceId)))
            await sim.responders[1].stop()
            guard case let .removed(gone)? = try await changes.next() else { Issue.record("expected removed"); return }
            #expect(gone.deviceId == sim.speakers[1].deviceId)
            await sim.shutdown()
        }
    }

    /// Defect 5 of issue 19: a query sent to the discovery port itself (`--discovery-target HOST:PORT`) reached one
    /// of the speakers sharing the port (SO_REUSEPORT hands a unicast datagram to one socket): 1 of 3 answered.
    @Test func aQueryToTheSharedPortIsAnsweredByEverySpeaker() async throws {
        try await withTimeLimit {
            let probe = try UDPSocket.bind(host: "127.0.0.1")
            let port = probe.localPort
            probe.close()
            let sim = try await SpeakerSimulation.start(count: 3, discovery: .shared(host: "127.0.0.1", port: port))
            let found = try await DiscoveryClient(targets: [("127.0.0.1", port)], window: .milliseconds(300)).discover()
            #expect(found.map(\.deviceId).sorted() == sim.speakers.map(\.deviceId).sorted())
            #expect(Set(found.map(\.endpoint)) == Set(sim.endpoints))
            // A speaker switched off no longer answers; the others still do.
            await sim.speakers[1].powerOff()
            let rest = try await DiscoveryClient(targets: [("127.0.0.1", port)], window: .milliseconds(300)).discover()
            #expect(Set(rest.map(\.deviceId)) == [sim.speakers[0].deviceId, sim.speakers[2].deviceId])
            await sim.shutdown()
        }
    }

    @Test func garbageAndNoAnswersGiveAnEmptyRound() async throws {
        try await withTimeLimit {
            // A UDP socket that answers every query with garbage: ignored.
            let noise = try UDPSocket.bind(host: "127.0.0.1")
            let task = Task {
                while let d = try? await noise.receive() { try? await noise.send([0x54, 0x44, 1, 2, 0, 0], toHost: d.host, port: d.port) }
            }
            let found = try await DiscoveryClient(targets: [("127.0.0.1", noise.localPort)], window: .milliseconds(200)).discover()
            #expect(found.isEmpty)
            task.cancel()
            noise.close()
        }
    }
}

@Suite("Speaker DAC clock and clock sync")
struct ClockSyncTests {
    /// Samples on a manual clock with a symmetric 200 µs network delay: the fit must recover the configured offset
    /// and drift. Bound: the map's speaker time within 2 µs of the DAC clock over the sampled span and the rate
    /// within 5 ppb of the drift.
    @Test(arguments: [(Int64(4_000_000_000), 25.0), (Int64(-1_500_000_000), -480.0), (Int64(17), 0.0)])
    func fitRecoversOffsetAndDrift(offset: Int64, ppm: Double) async throws {
        let time = ManualTimeSource(start: 10_000_000_000)
        let clock = DACClock(offset: offset, driftPPM: ppm, source: time.source)
        let sim = try InProcessSpeaker(clock: clock)
        let session = try await sim.session()
        var samples: [ClockSample] = []
        for _ in 0..<40 {
            let t1 = time.now
            time.advance(by: 100_000)  // the request travels 100 µs; the speaker answers at once (t2 = t3)
            // The in-memory speaker reads the time when it handles the request; freeze it for the exchange.
            let reply = try await session.clockSync(t1: t1)
            time.advance(by: 100_000)
            samples.append(ClockSample(reply, receivedAt: time.now))
            time.advance(by: 250_000_000)
        }
        let map = try #require(ClockMap.fit(samples))
        #expect(abs(Double(map.rate) - ppm * 1000) <= 5, "rate \(map.rate) ppb for \(ppm) ppm")
        for c in stride(from: samples[0].t1, through: samples.last!.t4, by: 1_000_000_000) {
            let error = Int64(bitPattern: map.speakerTime(forControllerTime: c) &- clock.time(atTrueTime: c))
            #expect(abs(error) <= 2_000, "error \(error) ns at \(c)")
        }
        try await session.setClockMap(map)
        await session.close()
        await sim.server.shutdown()
    }
}

/// The tracker's fit on a speaker 4 s ahead drifting +300 ppm, every exchange's legs 100 µs: the drift comes from the
/// whole window even when a burst of fast exchanges crowds one end, slow ones (a leg that waited) barely count, and
/// exchanges that finished out of order (their midpoints not increasing) do not matter.
@Suite("Clock tracker")
struct ClockTrackerTests {
    static func sample(at t: UInt64, extraDelay: UInt64 = 0) throws -> ClockSample {
        let speaker = { (c: UInt64) in c + 4_000_000_000 + c * 300 / 1_000_000 }
        let t1 = t, t2 = speaker(t + 100_000 + extraDelay), t4 = t + 200_000 + extraDelay
        return ClockSample(try ClockSyncReply(t1: t1, t2: t2, t3: t2), receivedAt: t4)
    }

    @Test(arguments: [false, true])
    func fitsTheDriftOverTheWindow(outOfOrder: Bool) throws {
        var tracker = ClockTracker()
        var samples: [ClockSample] = []
        // A burst of 20 fast exchanges in 20 ms, then one every 250 ms for 4 s, every third waiting 5 ms on a leg.
        for k in 0..<20 { samples.append(try Self.sample(at: 1_000_000_000 + UInt64(k) * 1_000_000)) }
        for k in 0..<16 { samples.append(try Self.sample(at: 1_100_000_000 + UInt64(k) * 250_000_000, extraDelay: k % 3 == 0 ? 5_000_000 : 0)) }
        if outOfOrder { samples.swapAt(0, 1); samples.swapAt(25, 26) }
        for s in samples { tracker.add(s) }
        let map = try #require(tracker.estimate)
        #expect(abs(Int(map.rate) - 300_000) <= 2_000, "rate \(map.rate) ppb for 300 ppm")
        let now: UInt64 = 5_100_000_000
        let truth = now + 4_000_000_000 + now * 300 / 1_000_000
        let error = Int64(bitPattern: map.speakerTime(forControllerTime: now) &- truth)
        #expect(abs(error) <= 10_000, "offset error \(error) ns")
    }

    /// The case the window-wide fit is for: the fastest exchanges are crowded into half a second and one of their
    /// legs jitters (their offsets scatter by up to ±50 µs), while the exchanges spread over the next 3 s are slower
    /// but symmetric (their offsets are exact). A fit through the fastest samples alone — the tracker before the
    /// window-wide fit kept only samples within 100 µs of the fastest round trip — takes its slope from the crowded
    /// half second (tens of ppm off); the drift must come from the whole window.
    @Test func crowdedFastSamplesDoNotSetTheDrift() throws {
        let rate: UInt64 = 300  // ppm
        let speaker = { (c: UInt64) in c + 4_000_000_000 + c * rate / 1_000_000 }
        var random = SeededRandom(seed: 11)
        func sample(at t1: UInt64, outbound: UInt64, inbound: UInt64) throws -> ClockSample {
            let t2 = speaker(t1 + outbound)
            return ClockSample(try ClockSyncReply(t1: t1, t2: t2, t3: t2), receivedAt: t1 + outbound + inbound)
        }
        var tracker = ClockTracker()
        // 50 exchanges 10 ms apart: 100 µs each way, the way out up to 100 µs longer.
        for k in 0..<50 {
            let t = 1_000_000_000 + UInt64(k) * 10_000_000
            tracker.add(try sample(at: t, outbound: 100_000 + random.next(upperBound: UInt64(100_000)), inbound: 100_000))
        }
        // 13 exchanges 250 ms apart: 250 µs each way.
        for k in 1...13 {
            tracker.add(try sample(at: 1_490_000_000 + UInt64(k) * 250_000_000, outbound: 250_000, inbound: 250_000))
        }
        let map = try #require(tracker.estimate)
        #expect(abs(Int(map.rate) - Int(rate) * 1_000) <= 5_000, "rate \(map.rate) ppb for \(rate) ppm")
        let now: UInt64 = 5_000_000_000
        let error = Int64(bitPattern: map.speakerTime(forControllerTime: now) &- speaker(now))
        #expect(abs(error) <= 20_000, "offset error \(error) ns at 5 s")
    }
}

@Suite("Simulated speaker robustness")
struct SimulatedSpeakerRobustnessTests {
    @Test func stateFileThatIsADirectoryOrHasNoDirectoryIsRefused() async throws {
        let directory = scratchPath("dir")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let e = #expect(throws: SimulatorError.self) { try SpeakerStateFile(path: directory) }
        #expect(e?.message.contains("is a directory") == true)
        let f = #expect(throws: SimulatorError.self) { try SpeakerStateFile(path: directory + "/no/such/speakers.json") }
        #expect(f?.message.contains("does not exist") == true && f?.category == .localFile)
    }

    @Test func aControllerThatNeverReadsIsDropped() async throws {
        try await withTimeLimit {
            let sim = try InProcessSpeaker()
            let link = try sim.link()
            let hello = try ControlPacket(requestId: 1, message: .hello(try Hello(controllerName: "greedy"))).encode()
            try await link.send(hello)
            var id: UInt32 = 1
            var closed = false
            // Requests and no reads: the speaker's replies pile up until it drops the link.
            sending: for _ in 0..<200 {
                var batch: [UInt8] = []
                for _ in 0..<100 {
                    id += 1
                    batch += try ControlPacket(requestId: id, message: .getDeviceInfo).encode()
                }
                do { try await link.send(batch) } catch { closed = true; break sending }
            }
            // Drain what was sent before the speaker closed: the link ends.
            while !closed {
                do { _ = try await link.receive() } catch { closed = true }
            }
            #expect(closed)
            await sim.server.shutdown()
        }
    }
}
