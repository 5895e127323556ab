import Glibc
import Simulator
import SpeakerPlayback
import SpeakerSession
import SpeakerSimulator
import TestSupport
import Testing
import Transport

/// Clock sync over UDP (protocol version 4, docs/speaker-protocol.md §6.1): which path the player takes with which
/// speaker, and what a speaker answers.
@Suite("Clock sync datagrams")
struct ClockDatagramTests {
    static func monotonic() -> UInt64 { monotonicNanoseconds() }

    /// A version-4 speaker is measured with datagrams only, a version-3 speaker with `clockSync` on its control link
    /// only; both get a clock map.
    @Test func thePlayerUsesDatagramsWithAVersion4SpeakerAndTheControlLinkWithAnOlderOne() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 2, versions: { [SpeakerProtocolVersion.supported, 1...3][$0] })
            let (new, old) = (sim.speakers[0], sim.speakers[1])
            #expect(new.versions.upperBound == SpeakerProtocolVersion.supported.upperBound && old.versions == 1...3)
            var sessions: [SpeakerSession] = []
            for e in endpoints(sim) { sessions.append(try await SpeakerSession.connect(host: e.host, port: e.port)) }
            #expect(sessions.map(\.hello.version) == [SpeakerProtocolVersion.supported.upperBound, 3])
            let player = try SpeakerPlayer()
            for s in sessions {
                try await s.joinSession()
                await player.add(s)
            }
            // The speaker counts a request before its reply leaves: the player's count of answers is waited for too.
            try await waitUntil("both speakers measured three times, and the player has three answers") {
                new.clockSyncCounts.datagrams >= 3 && old.clockSyncCounts.control >= 3
                    && player.clockDatagramCounts.answered >= 3
            }
            try await waitUntil("both speakers have a clock map") {
                sim.speakers.allSatisfy { $0.hasClockMap }
            }
            #expect(new.clockSyncCounts.control == 0, "\(new.clockSyncCounts)")
            #expect(old.clockSyncCounts.datagrams == 0, "\(old.clockSyncCounts)")
            // The speaker's t2 is the kernel's receive time (its DAC clock is the monotonic one).
            let counts = new.clockSyncCounts  // read once: the player goes on measuring
            #expect(counts.kernelTimestamped == counts.datagrams, "\(counts)")
            await player.close()
            for s in sessions { await s.close() }
            await sim.shutdown()
        }
    }

    /// A version-4 speaker whose datagrams get no answer (a firewall that lets the control link through but not UDP:
    /// here the session points at a UDP port where nothing answers) is measured over the control link after
    /// `clockDatagramAttempts` unanswered datagrams, and gets its clock map.
    @Test func aSpeakerWhoseDatagramsGoUnansweredIsMeasuredOverTheControlLink() async throws {
        try await withTimeLimit {
            let speaker = SimulatedSpeaker(.init(identity: .simulated(index: 0, seed: 7)))
            let clockSocket = try UDPSocket.bind(host: "127.0.0.1", port: 0, receiveTimestamps: true)
            speaker.startClockSync(on: clockSocket)  // so it offers version 4
            let silent = try UDPSocket.bind(host: "127.0.0.1", port: 0)  // never read: requests sent here go unanswered
            defer { silent.close() }
            let server = try SimulatedDeviceServer(devices: [speaker])
            let (a, b) = InMemoryTransport.pair()
            try server.serve(link: b, onDevice: 0)
            let session = try await SpeakerSession.open(transport: a, address: "behind a firewall", host: "127.0.0.1",
                                                        controlPort: silent.localPort)
            #expect(session.hello.version == SpeakerProtocolVersion.supported.upperBound)
            let player = try SpeakerPlayer()
            await player.add(session)
            try await waitUntil("the speaker measured over its control link") { speaker.clockSyncCounts.control >= 2 }
            try await waitUntil("the speaker has a clock map") { speaker.hasClockMap }
            #expect(player.clockDatagramCounts.answered == 0)
            #expect(player.clockDatagramCounts.unanswered == UInt64(SpeakerPlayer.clockDatagramAttempts))
            #expect(speaker.clockSyncCounts.datagrams == 0)
            await player.close()
            await session.close()
            await server.shutdown()
        }
    }

    /// The reply to a request datagram echoes t1 and carries t2 ≤ t3 on the DAC clock, t2 being when the kernel took
    /// the request in: on loopback that is inside the sender's `sendto`, so between two clock reads around it.
    @Test func aSpeakerAnswersWithTheKernelsReceiveTimeAndT2BeforeT3() async throws {
        try await withTimeLimit {
            let offset: Int64 = 7_000_000_000
            let sim = try await SpeakerSimulation.start(count: 1, clocks: { _ in DACClock(offset: offset) })
            let port = try #require(UInt16(sim.endpoints[0].split(separator: ":")[1]))
            let probe = try UDPSocket.bind(host: "127.0.0.1", port: 0, receiveTimestamps: true)
            defer { probe.close() }
            try await KernelStamping.waitUntilOn()
            let before = Self.monotonic()
            #expect(try probe.trySend(toHost: "127.0.0.1", port: port) { ClockDatagram.request(t1: 42).encode() })
            let after = Self.monotonic()
            let datagram = try await probe.receive()
            guard case let .reply(reply) = try ClockDatagram.decode(datagram.bytes) else {
                Issue.record("expected a reply, got \(datagram.bytes)")
                return
            }
            #expect(reply.t1 == 42)
            #expect(reply.t2 <= reply.t3)
            let t2 = reply.t2 &- UInt64(offset)
            #expect(before <= t2 && t2 <= after, "t2 \(t2) outside the send's \(before)...\(after)")
            // The reply's own arrival: after the speaker's t3 (same clock bar the offset).
            let arrival = try #require(datagram.receivedAt)
            #expect(reply.t3 &- UInt64(offset) <= arrival)
            #expect(sim.speakers[0].clockSyncCounts.datagrams == 1)
            // Garbage and replies are not answered.
            #expect(try probe.trySend(toHost: "127.0.0.1", port: port) { ClockDatagram.reply(reply).encode() })
            #expect(try probe.trySend(toHost: "127.0.0.1", port: port) { [0x54, 0x43, 4, 1] })
            #expect(try probe.trySend(toHost: "127.0.0.1", port: port) { ClockDatagram.request(t1: 43).encode() })
            let next = try ClockDatagram.decode(try await probe.receive().bytes)
            guard case let .reply(second) = next else { Issue.record("expected a reply"); return }
            #expect(second.t1 == 43)
            await sim.shutdown()
        }
    }
}
