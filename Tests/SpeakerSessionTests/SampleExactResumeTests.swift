import Simulator
import SpeakerPlayback
import SpeakerSession
import SpeakerSimulator
import Support
import Testing
import TestSupport
import Transport

/// A pause and resume on a `ManualClock`, the controller's decisions made by `PlaybackMachine` as `SpeakerPlayer`
/// makes them (pause, the speakers told, resume: the speakers told, then where each paused — version 5's
/// `playbackPaused`, as its session recorded it — given to the machine before it resumes), the audio datagrams handed
/// to the simulated speakers as they would come off the network, and each speaker's output rendered every 5 ms of the
/// clock (docs/speaker-protocol.md §3.2, §10.3). The pause reaches the speakers between two renders, 0.4 ms apart.
/// Every source frame carries its own index, so each speaker's output says which frames it played in which order.
final class ExactResumeRig {
    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)
    /// Milliseconds between two renders of a speaker (its pump's period).
    static let renderPeriod: UInt64 = 5

    let clock: ManualClock
    let time: TimeSource
    let server: SimulatedDeviceServer<SimulatedSpeaker>
    var sessions: [SpeakerSession] = []
    var machine = PlaybackMachine(buffer: .milliseconds(200), firstStreamId: 7)
    var run: UInt64?
    /// Source frames read so far.
    var read: UInt64 = 0
    /// Milliseconds of the clock since the start.
    var elapsedMs: UInt64 = 0

    var speakers: [SimulatedSpeaker] { server.devices }
    var ids: [UInt64] { speakers.map(\.deviceId) }

    init(speakers count: Int, versions: ClosedRange<UInt8> = SpeakerProtocolVersion.supported) async throws {
        let clock = ManualClock()
        self.clock = clock
        time = TimeSource(clock: clock)
        let speakers = (0..<count).map { k in
            var c = SimulatedSpeaker.Configuration(identity: .simulated(index: k, seed: 13), clock: DACClock(source: TimeSource(clock: clock)),
                                                   versions: versions, keepsRenderLogs: true, audioTimeout: 60_000_000_000)
            c.externalOutput = true  // rendered by `render()` below, every 5 ms of the clock
            return SimulatedSpeaker(c, index: k)
        }
        // Version 4 and on need the clock socket (nothing is sent to it here).
        for s in speakers { s.startClockSync(on: try UDPSocket.bind(host: "127.0.0.1", port: 0, receiveTimestamps: true)) }
        server = try SimulatedDeviceServer(devices: speakers)
        for k in 0..<count {
            let (a, b) = InMemoryTransport.pair()
            try server.serve(link: b, onDevice: k)
            let s = try await SpeakerSession.open(transport: a, address: "speaker \(k)", options: RequestOptions(timeout: .seconds(30)))
            try await s.joinSession()
            try await s.setVolume(50)  // unity gain: the samples unchanged
            // The DAC clocks are the controller's: the identity map.
            let now = time.now()
            try await s.setClockMap(try ClockMap(controllerReference: now, speakerReference: now, rate: 0))
            sessions.append(s)
            _ = machine.memberAdded(s.deviceId)
        }
    }

    /// Frame `i` of the source: its index in both channels (left the low 15 bits + 1, right the rest + 1: never 0).
    static func frame(_ i: UInt64) -> [UInt8] {
        let left = UInt16(i & 0x7FFF) + 1, right = UInt16(i >> 15) + 1
        return [UInt8(left & 0xFF), UInt8(left >> 8), UInt8(right & 0xFF), UInt8(right >> 8)]
    }

    /// The source frame a sample of the output is (nil: silence).
    static func index(ofOutput pcm: [UInt8], at k: Int) -> UInt64? {
        let o = k * 4
        let left = UInt64(pcm[o]) | UInt64(pcm[o + 1]) << 8, right = UInt64(pcm[o + 2]) | UInt64(pcm[o + 3]) << 8
        guard left != 0, right != 0 else { return nil }
        return (right - 1) << 15 | (left - 1)
    }

    func play() async throws {
        let (id, actions) = machine.start(format: Self.format, startFrame: 0, title: "ramp", kind: .localFile, now: time.now())
        for case let .announce(member, _) in actions {
            try await sessions[ids.firstIndex(of: member)!].play(streamId: id, format: Self.format, source: .localFile, title: "ramp")
            _ = machine.memberStarted(member, streamId: id, now: time.now())
        }
        started(try machine.started(streamId: id, now: time.now()))
    }

    func started(_ actions: [PlaybackMachine.Action]) {
        for case let .startStreaming(r) in actions { run = r }
    }

    /// Sends what is due at the clock's now (the streaming loop's wake).
    func stream() {
        guard let run else { return }
        while true {
            switch machine.step(run: run, now: time.now()) {
            case let .read(maxFrames):
                var chunk: [UInt8] = []
                for _ in 0..<maxFrames { chunk += Self.frame(read); read += 1 }
                machine.sourceRead(run: run, chunk)
            case let .send(bytes, to, copies):
                for _ in 0..<copies { for id in to { speakers[ids.firstIndex(of: id)!].deliver(bytes) } }
            case .idle, .finish:
                return
            }
        }
    }

    /// Moves the clock `ms` milliseconds on, one at a time: the stream's packets go out, and the speakers render every
    /// 5 ms.
    func advance(ms: UInt64) {
        for _ in 0..<ms {
            clock.advance(by: .milliseconds(1))
            elapsedMs += 1
            stream()
            if elapsedMs % Self.renderPeriod == 0 { for s in speakers { s.renderNow() } }
        }
    }

    /// The clock moves `us` microseconds (not onto a render).
    func advance(us: Int) { clock.advance(by: .microseconds(us)) }

    /// Pauses here, the pause reaching the speakers one after another, `gapUs` after the controller and each other.
    func pause(gapUs: Int) async throws {
        let actions = try machine.pause(now: time.now())
        if case .stopStreaming = actions.first { run = nil }
        for s in sessions {
            advance(us: gapUs)
            try await s.pause(streamId: machine.streamId)
        }
    }

    /// Resumes as `SpeakerPlayer.resume()` does.
    func resume() async throws {
        let targets = try machine.resumeTargets()
        for s in sessions { try await s.resume(streamId: targets.streamId) }
        for (k, s) in sessions.enumerated() {
            if let p = s.takePausePosition(of: targets.streamId) { machine.speakerPausedAt(ids[k], p) }
        }
        started(try machine.resume(now: time.now()))
    }

    /// What each speaker played of the stream, in output order: frames skipped (a gap between two consecutive frames
    /// heard) and repeated (a frame not after the one before), over the whole output.
    func continuity() -> [(skipped: UInt64, repeated: UInt64, played: UInt64, last: UInt64?)] {
        speakers.map { s in
            let pcm = s.renderLogs.last?.pcm ?? []
            var skipped: UInt64 = 0, repeated: UInt64 = 0, played: UInt64 = 0
            var last: UInt64?
            for k in 0..<pcm.count / 4 {
                guard let i = Self.index(ofOutput: pcm, at: k) else { continue }
                played += 1
                if let l = last {
                    if i > l + 1 { skipped += i - l - 1 }
                    if i <= l { repeated += l - i + 1 }
                }
                last = i
            }
            return (skipped, repeated, played, last)
        }
    }

    func close() async {
        for s in sessions { await s.close() }
        await server.shutdown()
    }
}

@Suite("Sample-exact resume")
struct SampleExactResumeTests {
    /// Two speakers play a stream whose every frame says its index; 0.5172 s in — between two renders — the
    /// controller pauses, the pause reaching the first speaker 0.4 ms later and the second 0.4 ms after it; 0.1 s later it
    /// resumes. Each
    /// speaker plays, across the pause, every frame once in order: none skipped (before: the 2.2 ms between its last
    /// render and the pause, 104 frames on each), none repeated (with the render up to the pause but no
    /// `playbackPaused`: the frames between the controller's clock at the pause and the speaker's, as
    /// `aVersion4SpeakerResumesAsBefore`). Both play the frames after the resume at the same slot (in sync), the second speaker, ahead at the
    /// pause, silent for its lead.
    @Test func eachSpeakerResumesWithTheFrameAfterTheLastItPlayed() async throws {
        try await withTimeLimit {
            let rig = try await ExactResumeRig(speakers: 2)
            #expect(rig.sessions.allSatisfy { $0.hello.version == 5 })
            try await rig.play()
            rig.advance(ms: 517)
            rig.advance(us: 200)  // 2.2 ms past the last render (at 515 ms)
            try await rig.pause(gapUs: 400)
            rig.advance(ms: 100)
            try await rig.resume()
            rig.advance(ms: 600)
            let figures = rig.continuity()
            for (k, f) in figures.enumerated() {
                #expect(f.skipped == 0 && f.repeated == 0, "speaker \(k): \(f.skipped) frames skipped, \(f.repeated) repeated, \(f.played) played")
                #expect(f.played > 48_000 * 7 / 10, "speaker \(k) played \(f.played) frames")
            }
            // In sync after the resume: a frame well after it comes out at the same slot on both.
            let logs = rig.speakers.map { $0.renderLogs.last!.log }
            let frame = figures.compactMap(\.last).min()! - 4_800
            let slots = logs.map { $0.slot(ofSourceFrame: frame, in: $0.sourceIndex()) }
            #expect(slots[0] != nil && slots[0] == slots[1], "frame \(frame) at slots \(slots)")
            await rig.close()
        }
    }

    /// A speaker of version 4 gets no sample-exact resume (it sends no `playbackPaused`, and the controller resumes
    /// from where its own clock placed the pause): as before, it repeats what it played after that moment.
    @Test func aVersion4SpeakerResumesAsBefore() async throws {
        try await withTimeLimit {
            let rig = try await ExactResumeRig(speakers: 1, versions: 1...4)
            #expect(rig.sessions[0].hello.version == 4)
            try await rig.play()
            rig.advance(ms: 517)
            rig.advance(us: 200)
            let paused = try rig.machine.pause(now: rig.time.now())
            #expect(paused.contains(.stateChanged(.paused)))
            rig.run = nil
            rig.advance(us: 400)  // the pause reaches it 0.4 ms later
            try await rig.sessions[0].pause(streamId: rig.machine.streamId)
            rig.advance(ms: 100)
            try await rig.resume()
            #expect(rig.sessions[0].takePausePosition(of: rig.machine.streamId) == nil)
            rig.advance(ms: 600)
            let f = rig.continuity()[0]
            #expect(f.skipped == 0)
            #expect(f.repeated == 20, "\(f.repeated) repeated (the 0.4 ms after the controller's pause: 19.2 frames at 48 kHz, 20 slots)")
            await rig.close()
        }
    }
}
