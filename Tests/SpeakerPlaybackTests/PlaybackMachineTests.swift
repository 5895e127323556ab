import Failure
import Speaker
import SpeakerPlayback
import Testing

/// `PlaybackMachine` alone: every event in every state, on explicit controller times (no clock, no I/O).
struct PlaybackMachineTests {
    typealias Action = PlaybackMachine.Action
    typealias Refusal = PlaybackMachine.Refusal

    /// 48 kHz mono 16-bit: a frame is 2 bytes, a millisecond 48 frames.
    static let format = try! AudioFormat(sampleRate: 48_000, channels: 1, sampleFormat: .s16le)
    static let ms: UInt64 = 1_000_000
    static let stream: UInt32 = 7

    /// The source: frame i holds i (low 16 bits), so a packet's PCM tells which frames it carries.
    struct Source {
        var next: UInt64
        let end: UInt64
        var failAt: UInt64?
        mutating func read(_ maxFrames: Int) -> [UInt8] {
            let n = min(UInt64(maxFrames), end - next)
            defer { next += n }
            return (next..<(next + n)).flatMap { [UInt8($0 & 0xFF), UInt8(($0 >> 8) & 0xFF)] }
        }
    }

    /// What one wake of the streaming loop did.
    struct Wake {
        var packets: [(packet: AudioPacket, to: [UInt64], copies: Int)] = []
        var actions: [Action] = []
        var finished = false
        var reads = 0
    }

    /// Runs the loop of `run` at `now` until it waits or finishes, feeding it `source`.
    static func wake(_ m: inout PlaybackMachine, run: UInt64, now: UInt64, _ source: inout Source) throws -> Wake {
        var w = Wake()
        for _ in 0..<10_000 {
            switch m.step(run: run, now: now) {
            case let .read(maxFrames):
                w.reads += 1
                m.sourceRead(run: run, source.read(maxFrames))
            case let .send(bytes, ids, copies):
                w.packets.append((try AudioPacket.decode(bytes), ids, copies))
            case let .idle(actions):
                w.actions = actions
                return w
            case let .finish(actions):
                w.actions = actions
                w.finished = true
                return w
            }
        }
        Issue.record("the loop never waited")
        return w
    }

    static func machine(members: [UInt64] = [1, 2]) -> PlaybackMachine {
        var m = PlaybackMachine(buffer: .milliseconds(200), firstStreamId: stream)
        for id in members { _ = m.memberAdded(id) }
        return m
    }

    /// Members 1 and 2 announced to and playing from frame `from`, started at `now`; returns the run.
    static func playing(_ m: inout PlaybackMachine, from: UInt64 = 0, now: UInt64 = 0) throws -> UInt64 {
        let (id, _) = m.start(format: format, startFrame: from, title: "t", kind: .localFile, now: now)
        for member in m.members { _ = m.memberStarted(member, streamId: id, now: now) }
        let actions = try m.started(streamId: id, now: now)
        guard case let .startStreaming(run) = actions.last else {
            Issue.record("started did not start streaming: \(actions)")
            return 0
        }
        return run
    }

    static func pauseEpoch(_ m: PlaybackMachine) -> UInt64? {
        if case let .paused(_, p) = m.state { return p.epoch }
        return nil
    }

    /// The five states, each with members 1 and 2 (2 receiving where a stream is).
    static func everyState() throws -> [(String, PlaybackMachine)] {
        let initialized = machine()
        var starting = machine()
        _ = starting.start(format: format, startFrame: 0, title: "", kind: .localFile, now: 0)
        _ = starting.memberStarted(2, streamId: stream, now: 0)
        var playing = machine()
        let run = try Self.playing(&playing)
        var source = Source(next: 0, end: 48_000)
        _ = try wake(&playing, run: run, now: 0, &source)
        var paused = playing
        _ = try paused.pause(now: 100 * ms)
        var stopped = playing
        _ = stopped.stop()
        return [("initialized", initialized), ("starting", starting), ("playing", playing), ("paused", paused), ("stopped", stopped)]
    }

    // MARK: Starting

    @Test func aNewMachineShowsInitializedWithNothingToReport() {
        let m = Self.machine()
        #expect(m.playerState == .initialized)
        #expect(m.streamId == 0)
        #expect(m.elapsed(at: 123) == nil)
        #expect(m.receivingIds.isEmpty)
        #expect(m.members == [1, 2])
    }

    @Test func startAnnouncesToEveryMemberInOrderAndStillShowsTheStateBefore() {
        var m = Self.machine(members: [5, 3, 9])
        let (id, actions) = m.start(format: Self.format, startFrame: 0, title: "a", kind: .localFile, now: 0)
        #expect(id == Self.stream)
        #expect(actions == [.announce(to: 5, streamId: id), .announce(to: 3, streamId: id), .announce(to: 9, streamId: id)])
        #expect(m.playerState == .initialized)
        #expect(m.streamId == id)
        #expect(m.elapsed(at: 0) == nil)
    }

    @Test func streamIdsFollowOnAndWrapPastTheLargest() {
        var m = PlaybackMachine(buffer: .milliseconds(200), firstStreamId: UInt32.max)
        _ = m.memberAdded(1)
        #expect(m.start(format: Self.format, startFrame: 0, title: "", kind: .localFile, now: 0).streamId == UInt32.max)
        #expect(m.start(format: Self.format, startFrame: 0, title: "", kind: .localFile, now: 0).streamId == 1)
        var z = PlaybackMachine(buffer: .zero, firstStreamId: 0)
        _ = z.memberAdded(1)
        #expect(z.start(format: Self.format, startFrame: 0, title: "", kind: .localFile, now: 0).streamId == 1)
    }

    @Test func membersThatGotTheAnnouncementJoinAndStartedPlaysABufferAhead() throws {
        var m = Self.machine()
        let (id, _) = m.start(format: Self.format, startFrame: 0, title: "", kind: .localFile, now: 0)
        #expect(m.memberStarted(2, streamId: id, now: 0) == [.speakerJoined(2)])
        #expect(m.memberStarted(2, streamId: id &+ 1, now: 0) == [])
        #expect(m.memberStarted(99, streamId: id, now: 0) == [])
        #expect(m.receivingIds == [2])
        let actions = try m.started(streamId: id, now: 50 * Self.ms)
        guard case let .startStreaming(run) = actions.last else { Issue.record("\(actions)"); return }
        #expect(actions == [.stateChanged(.playing), .startStreaming(run: run)])
        #expect(m.playerState == .playing)
        #expect(m.stream?.schedule.anchorTime == 250 * Self.ms)
        #expect(m.elapsed(at: 250 * Self.ms + 500 * Self.ms) == 0)  // nothing sent yet: the timeline waits at the anchor
    }

    @Test func noMemberStartedIsRefusedAndTheStateBeforeIsShownAgain() throws {
        var m = Self.machine()
        let (id, _) = m.start(format: Self.format, startFrame: 0, title: "", kind: .localFile, now: 0)
        #expect(throws: Refusal.noMemberStarted) { try m.started(streamId: id, now: 0) }
        #expect(m.playerState == .initialized)
        #expect(m.streamId == 0)

        // After a stream that stopped, a failed start shows stopped.
        var n = Self.machine()
        _ = try Self.playing(&n)
        _ = n.stop()
        let (id2, _) = n.start(format: Self.format, startFrame: 0, title: "", kind: .localFile, now: 0)
        #expect(throws: Refusal.noMemberStarted) { try n.started(streamId: id2, now: 0) }
        #expect(n.playerState == .stopped)
    }

    @Test func startedIsRefusedInEveryOtherStateAndForAnotherStream() throws {
        for (name, var m) in try Self.everyState() {
            let before = m.playerState
            if name == "starting" {
                #expect(throws: Refusal.notStarting) { try m.started(streamId: Self.stream &+ 1, now: 0) }
            } else {
                #expect(throws: Refusal.notStarting, "\(name)") { try m.started(streamId: Self.stream, now: 0) }
            }
            #expect(m.playerState == before, "\(name)")
        }
    }

    @Test func startingAgainStopsTheStreamPlayingFirst() throws {
        var m = Self.machine()
        let run = try Self.playing(&m)
        let (id, actions) = m.start(format: Self.format, startFrame: 0, title: "", kind: .localFile, now: 0)
        #expect(actions == [.stopStreaming(run: run),
                            .stopSpeakers(streamId: Self.stream, ids: [1, 2], reportErrors: true, afterAnotherController: false),
                            .stateChanged(.stopped), .announce(to: 1, streamId: id), .announce(to: 2, streamId: id)])
        #expect(m.playerState == .stopped)
    }

    // MARK: Streaming

    @Test func eachWakeSendsThePacketsDueWithinTheBufferInOrderThenReportsTheSecond() throws {
        var m = Self.machine()
        let run = try Self.playing(&m)  // frame 0 heard at 200 ms
        var source = Source(next: 0, end: 480_000)
        let first = try Self.wake(&m, run: run, now: 100 * Self.ms, &source)
        let perPacket = UInt64(m.stream!.schedule.framesPerPacket)
        // Due within 200 ms of now: frames presented from 200 ms (the anchor) to 300 ms.
        #expect(first.packets.count > 2)
        #expect(first.packets.allSatisfy { $0.to == [1, 2] && $0.copies == 1 && $0.packet.streamId == Self.stream })
        #expect(first.packets.map(\.packet.firstFrame) == (0..<UInt64(first.packets.count)).map { $0 * perPacket })
        #expect(first.packets.map(\.packet.sequence) == (0..<UInt32(first.packets.count)).map { $0 })
        #expect(first.packets.first!.packet.presentationTime == 200 * Self.ms)
        #expect(first.packets.last!.packet.presentationTime <= 300 * Self.ms)
        #expect(first.packets.last!.packet.presentationTime + Self.format.nanoseconds(forFrames: perPacket) > 300 * Self.ms)
        #expect(first.packets[0].packet.pcm[0...3] == [0, 0, 1, 0])
        #expect(first.actions == [])
        // Nothing new due at the same time.
        #expect(try Self.wake(&m, run: run, now: 100 * Self.ms, &source).packets.isEmpty)
        // 1.2 s later the first second was heard.
        let later = try Self.wake(&m, run: run, now: 1_200 * Self.ms, &source)
        #expect(later.actions == [.time(seconds: 1)])
        #expect(m.elapsed(at: 1_200 * Self.ms) == 1.0)
        #expect(try Self.wake(&m, run: run, now: 1_300 * Self.ms, &source).actions == [])
        #expect(try Self.wake(&m, run: run, now: 2_200 * Self.ms, &source).actions == [.time(seconds: 2)])
    }

    @Test func aStreamFromLaterReportsOnlySecondsPastItsStart() throws {
        var m = Self.machine()
        let run = try Self.playing(&m, from: 96_000)  // --from 2 s
        var source = Source(next: 96_000, end: 480_000)
        #expect(try Self.wake(&m, run: run, now: 0, &source).actions == [])
        #expect(try Self.wake(&m, run: run, now: 700 * Self.ms, &source).actions == [])  // 2.5 s: second 2, where it started
        #expect(try Self.wake(&m, run: run, now: 1_200 * Self.ms, &source).actions == [.time(seconds: 3)])
    }

    @Test func theEndOfTheStreamGoesOutThreeTimesAndASpeakerSayingItEndedEndsThePlayback() throws {
        var m = Self.machine()
        let run = try Self.playing(&m)
        var source = Source(next: 0, end: 4_800)  // 100 ms, heard 200 ... 300 ms
        let w = try Self.wake(&m, run: run, now: 100 * Self.ms, &source)
        let last = try #require(w.packets.last)
        #expect(last.packet.endOfStream)
        #expect(last.copies == 3)
        #expect(w.packets.dropLast().allSatisfy { !$0.packet.endOfStream && $0.copies == 1 })
        #expect(last.packet.firstFrame + UInt64(last.packet.frameCount) == 4_800)
        // Nothing more is sent.
        #expect(try Self.wake(&m, run: run, now: 100 * Self.ms, &source).packets.isEmpty)
        #expect(m.speakerEnded(1, streamId: Self.stream &+ 1) == [])
        // Member 2's output comes later: member 1's end does not end the playback.
        #expect(m.speakerEnded(1, streamId: Self.stream) == [])
        #expect(m.playerState == .playing)
        // The last second is reported at the end (second 0 of a stream shorter than one).
        #expect(m.speakerEnded(2, streamId: Self.stream) == [.stopStreaming(run: run), .time(seconds: 0), .ended, .stateChanged(.stopped)])
        #expect(m.playerState == .stopped)
        #expect(m.streamId == 0)
        #expect(m.step(run: run, now: 0) == .finish([]))
    }

    @Test func withNoSpeakerSayingItEndedThePlaybackEndsOnTheTimelineTheEndGraceAfterTheLastFrame() throws {
        var m = Self.machine()
        let run = try Self.playing(&m)
        var source = Source(next: 0, end: 48_000 + 4_800)  // 1.1 s, heard 200 ms ... 1.3 s
        var seconds: [Action] = []
        for t in stride(from: UInt64(0), through: 3_300, by: 100) {
            let w = try Self.wake(&m, run: run, now: t * Self.ms, &source)
            #expect(!w.finished, "at \(t) ms")
            seconds += w.actions
        }
        // No second the stream does not have is counted while it waits.
        #expect(seconds == [.time(seconds: 1)])
        let end = try Self.wake(&m, run: run, now: 3_301 * Self.ms, &source)
        #expect(end.finished)
        #expect(end.actions == [.stopSpeakers(streamId: Self.stream, ids: [1, 2], reportErrors: false, afterAnotherController: false),
                                .stopStreaming(run: run), .ended, .stateChanged(.stopped)])
        #expect(m.playerState == .stopped)
    }

    /// Issue 30 item 8: a member whose end comes later (a receiver's latency, a simulated speaker's pump) is not cut
    /// off by an earlier member's end: the playback ends when the last one reports it, and at the end grace only
    /// the members still silent about it are stopped.
    @Test func thePlaybackWaitsForEveryMembersEndAndStopsOnlyThoseThatNeverSaidIt() throws {
        var m = Self.machine(members: [1, 2, 3])
        let run = try Self.playing(&m)
        var source = Source(next: 0, end: 4_800)  // 100 ms, heard 200 ... 300 ms
        _ = try Self.wake(&m, run: run, now: 100 * Self.ms, &source)
        #expect(m.speakerEnded(2, streamId: Self.stream) == [])
        #expect(try Self.wake(&m, run: run, now: 2_300 * Self.ms, &source).finished == false)
        let end = try Self.wake(&m, run: run, now: 2_301 * Self.ms, &source)
        #expect(end.finished)
        #expect(end.actions == [.stopSpeakers(streamId: Self.stream, ids: [1, 3], reportErrors: false, afterAnotherController: false),
                                .stopStreaming(run: run), .ended, .stateChanged(.stopped)])

        // The one not ended is lost: the others heard the end, so it ends.
        var n = Self.machine()
        let r = try Self.playing(&n)
        var s = Source(next: 0, end: 4_800)
        _ = try Self.wake(&n, run: r, now: 100 * Self.ms, &s)
        #expect(n.speakerEnded(1, streamId: Self.stream) == [])
        #expect(n.memberLost(2, reconnecting: true, now: 250 * Self.ms) == [.stopStreaming(run: r), .time(seconds: 0), .ended, .stateChanged(.stopped)])
    }

    /// Issue 30 item 9: the only member lost mid-stream. Reconnecting, the playback waits `lostTimeout` (3 s) for it,
    /// then stops as interrupted (no `.ended`); not reconnecting, at once; one that comes back in time plays on.
    @Test func losingEveryMemberStopsThePlaybackAsInterruptedNotEnded() throws {
        var m = Self.machine(members: [1])
        let run = try Self.playing(&m)
        var source = Source(next: 0, end: 480_000)  // 10 s
        _ = try Self.wake(&m, run: run, now: 0, &source)
        #expect(m.memberLost(1, reconnecting: true, now: 3_000 * Self.ms) == [])
        #expect(m.playerState == .playing)
        #expect(try Self.wake(&m, run: run, now: 5_999 * Self.ms, &source).finished == false)
        let w = try Self.wake(&m, run: run, now: 6_000 * Self.ms, &source)
        #expect(w.finished)
        #expect(w.actions.suffix(3) == [.stopStreaming(run: run), .interrupted(.everySpeakerLost), .stateChanged(.stopped)], "\(w.actions)")
        #expect(!w.actions.contains(.ended))

        var n = Self.machine(members: [1, 2])
        let r = try Self.playing(&n)
        #expect(n.memberLost(1, reconnecting: false, now: 0) == [])
        #expect(n.memberLost(2, reconnecting: false, now: 0) == [.stopStreaming(run: r), .interrupted(.everySpeakerLost), .stateChanged(.stopped)])

        var back = Self.machine(members: [1])
        let b = try Self.playing(&back)
        var s = Source(next: 0, end: 480_000)
        _ = back.memberLost(1, reconnecting: true, now: 1_000 * Self.ms)
        _ = back.memberAdded(1)
        _ = back.memberStarted(1, streamId: Self.stream, now: 2_000 * Self.ms)
        #expect(try Self.wake(&back, run: b, now: 9_000 * Self.ms, &s).finished == false)
        #expect(back.playerState == .playing)
    }

    /// Issue 30 item 9: another controller's stream playing on a member replaced this one there; once it did on every
    /// member the playback stops at once, as taken over, and the speakers (playing the other stream) are not told.
    @Test func anotherStreamPlayingOnEveryMemberStopsThePlaybackAtOnceAsTakenOver() throws {
        var m = Self.machine()
        let run = try Self.playing(&m)
        #expect(m.speakerResumed(1, streamId: 900, now: 0) == [])
        #expect(m.receivingIds == [2])
        #expect(m.speakerResumed(2, streamId: 900, now: 0) == [.stopStreaming(run: run), .interrupted(.takenOver(by: 900)), .stateChanged(.stopped)])
        #expect(m.playerState == .stopped)

        var p = Self.machine(members: [1])
        _ = try Self.playing(&p)
        _ = try p.pause(now: 0)
        #expect(p.speakerResumed(1, streamId: 900, now: 0) == [.interrupted(.takenOver(by: 900)), .stateChanged(.stopped)])
    }

    @Test func aFailingSourceIsReportedWhereItStoppedAndWhatItGaveStillPlaysToTheEnd() throws {
        var m = Self.machine()
        let run = try Self.playing(&m, from: 48_000)
        var source = Source(next: 48_000, end: 48_000 + 4_410)
        var packets: [AudioPacket] = []
        var reads = 0
        var failure: [Action] = []
        loop: for _ in 0..<1_000 {
            switch m.step(run: run, now: 500 * Self.ms) {
            case .read:
                reads += 1
                if reads == 1 {
                    m.sourceRead(run: run, source.read(4_410))
                } else {
                    failure = m.sourceFailed(run: run, category: .connection, message: "cut")
                }
            case let .send(bytes, _, _): packets.append(try AudioPacket.decode(bytes))
            case .idle, .finish: break loop
            }
        }
        #expect(reads == 2)
        #expect(failure == [.sourceFailed(seconds: 1.091_875, category: .connection, message: "cut")])
        #expect(packets.last?.endOfStream == true)
        #expect(packets.reduce(0) { $0 + $1.frameCount } == 4_410)
    }

    @Test func aStaleRunIsToldToFinishAndItsReadsAndFailuresChangeNothing() throws {
        var m = Self.machine()
        let old = try Self.playing(&m)
        _ = try m.pause(now: 0)
        let resumed = try m.resume(now: 0)
        guard case let .startStreaming(run) = resumed.last else { Issue.record("\(resumed)"); return }
        #expect(run != old)
        #expect(m.step(run: old, now: 0) == .finish([]))
        m.sourceRead(run: old, [1, 2, 3, 4])
        #expect(m.sourceFailed(run: old, category: .device, message: "x") == [])
        var source = Source(next: 0, end: 480_000)
        let w = try Self.wake(&m, run: run, now: 0, &source)
        #expect(w.packets.first?.packet.pcm[0...3] == [0, 0, 1, 0])  // the stale chunk was not queued
    }

    // MARK: Pause and resume

    @Test func pausingPutsTheFramesNotHeardBackAndResumingSendsThemFromThePausedFrame() throws {
        var m = Self.machine()
        let run = try Self.playing(&m)
        var source = Source(next: 0, end: 480_000)
        _ = try Self.wake(&m, run: run, now: 0, &source)
        _ = try Self.wake(&m, run: run, now: 100 * Self.ms, &source)
        // At 300 ms, 100 ms (4800 frames) were heard.
        let actions = try m.pause(now: 300 * Self.ms)
        #expect(actions == [.stopStreaming(run: run), .stateChanged(.paused),
                            .pauseSpeakers(streamId: Self.stream, ids: [1, 2])])
        #expect(m.playerState == .paused)
        #expect(m.elapsed(at: 900 * Self.ms) == 0.1)
        #expect(m.step(run: run, now: 300 * Self.ms) == .finish([]))
        let targets = try m.resumeTargets()
        #expect(targets.streamId == Self.stream && targets.ids == [1, 2])
        let resumed = try m.resume(now: 1_000 * Self.ms)
        guard case let .startStreaming(next) = resumed.last else { Issue.record("\(resumed)"); return }
        #expect(resumed == [.stateChanged(.playing), .startStreaming(run: next)])
        let w = try Self.wake(&m, run: next, now: 1_000 * Self.ms, &source)
        let first = try #require(w.packets.first?.packet)
        #expect(first.firstFrame == 4_800)
        #expect(first.presentationTime == 1_200 * Self.ms)
        #expect(first.pcm[0...1] == [UInt8(4_800 & 0xFF), UInt8(4_800 >> 8)])
        // The frames follow on without a gap or a repeat.
        let frames = w.packets.flatMap { p in (0..<p.packet.frameCount).map { UInt16(p.packet.pcm[2 * $0]) | UInt16(p.packet.pcm[2 * $0 + 1]) << 8 } }
        #expect(frames == (0..<frames.count).map { UInt16(4_800 + $0) })
        // The seconds go on from where it paused.
        #expect(try Self.wake(&m, run: next, now: 2_200 * Self.ms, &source).actions == [.time(seconds: 1)])
    }

    /// Version 5 (docs/speaker-protocol.md §3.2): the members report the first frame each had not played; the stream
    /// resumes from the earliest — before the frame the controller's clock placed the pause at (another controller's
    /// pause, learnt late) or after it (the pause travelling to the speakers) — with the frames from there sent again.
    /// A report of a frame never sent, of another stream or of a non-member is ignored; "nothing played" is no report.
    @Test func theStreamResumesFromTheEarliestFrameTheMembersReport() throws {
        for (reports, expected) in [([(1, 4_830), (2, 4_850)], 4_830), ([(1, 4_790), (2, 4_805)], 4_790), ([], 4_800),
                                    ([(1, 999_999), (2, 4_810), (3, 4_700)], 4_810), ([(1, PausePosition.nothingPlayed)], 4_800)]
            as [([(UInt64, UInt64)], UInt64)] {
            var m = Self.machine()
            let run = try Self.playing(&m)
            var source = Source(next: 0, end: 480_000)
            _ = try Self.wake(&m, run: run, now: 0, &source)
            _ = try Self.wake(&m, run: run, now: 100 * Self.ms, &source)
            _ = try m.pause(now: 300 * Self.ms)  // 4800 frames heard on the controller's clock
            m.speakerPausedAt(1, PausePosition(streamId: Self.stream &+ 1, nextFrame: 4_000))
            for (id, frame) in reports { m.speakerPausedAt(id, PausePosition(streamId: Self.stream, nextFrame: frame)) }
            #expect(m.resumeFrame == expected, "\(reports)")
            let resumed = try m.resume(now: 1_000 * Self.ms)
            guard case let .startStreaming(next) = resumed.last else { Issue.record("\(resumed)"); return }
            let w = try Self.wake(&m, run: next, now: 1_000 * Self.ms, &source)
            let first = try #require(w.packets.first?.packet)
            #expect(first.firstFrame == expected && first.presentationTime == 1_200 * Self.ms, "\(reports)")
            let frames = w.packets.flatMap { p in (0..<p.packet.frameCount).map { UInt16(p.packet.pcm[2 * $0]) | UInt16(p.packet.pcm[2 * $0 + 1]) << 8 } }
            #expect(frames == (0..<frames.count).map { UInt16(truncatingIfNeeded: expected + UInt64($0)) }, "\(reports)")
        }
    }

    @Test func pauseIsRefusedUnlessPlayingAndResumeUnlessPaused() throws {
        for (name, var m) in try Self.everyState() {
            let before = m.playerState
            if name != "playing" {
                #expect(throws: Refusal.notPlaying, "\(name)") { try m.pause(now: 0) }
            }
            if name != "paused" {
                #expect(throws: Refusal.notPaused, "\(name)") { try m.resume(now: 0) }
                #expect(throws: Refusal.notPaused, "\(name)") { try m.resumeTargets() }
            }
            #expect(m.playerState == before, "\(name)")
        }
    }

    @Test func anotherControllersPauseIsFollowedAndItsResumeOnceEveryMemberResumed() throws {
        var m = Self.machine()
        let run = try Self.playing(&m)
        #expect(m.speakerPaused(1, streamId: Self.stream &+ 1, now: 0) == [])
        #expect(m.speakerPaused(1, streamId: Self.stream, now: 0) == [.stopStreaming(run: run), .stateChanged(.paused)])
        #expect(m.speakerPaused(2, streamId: Self.stream, now: 0) == [])  // already paused
        let epoch = try #require(Self.pauseEpoch(m))
        #expect(m.speakerResumed(1, streamId: Self.stream &+ 1, now: 0) == [])
        #expect(m.speakerResumed(1, streamId: Self.stream, now: 0) == [.startResumeTimer(epoch: epoch, delay: .milliseconds(300))])
        #expect(m.playerState == .paused)
        let actions = m.speakerResumed(2, streamId: Self.stream, now: 0)
        #expect(actions.first == .stateChanged(.playing))
        #expect(m.playerState == .playing)
        // The timer of that pause fires late: nothing.
        #expect(m.resumeGraceEnded(epoch: epoch, now: 0) == [])
    }

    @Test func aMemberNotResumedIsWaitedForOnlyUntilTheGraceTimerOfThatPause() throws {
        var m = Self.machine()
        _ = try Self.playing(&m)
        _ = m.speakerPaused(1, streamId: Self.stream, now: 0)
        let epoch = try #require(Self.pauseEpoch(m))
        _ = m.speakerResumed(1, streamId: Self.stream, now: 0)
        #expect(m.resumeGraceEnded(epoch: epoch &+ 100, now: 0) == [])
        #expect(m.playerState == .paused)
        #expect(m.resumeGraceEnded(epoch: epoch, now: 0).first == .stateChanged(.playing))
        #expect(m.playerState == .playing)
        // A later pause has another epoch: the first one's timer does not resume it.
        _ = try m.pause(now: 0)
        #expect(m.resumeGraceEnded(epoch: epoch, now: 0) == [])
        #expect(m.playerState == .paused)
    }

    // MARK: Stopping

    @Test func stopInEveryState() throws {
        let expected: [String: [Action]] = [
            "initialized": [],
            "starting": [.stopSpeakers(streamId: Self.stream, ids: [2], reportErrors: true, afterAnotherController: false), .stateChanged(.stopped)],
            "paused": [.stopSpeakers(streamId: Self.stream, ids: [1, 2], reportErrors: true, afterAnotherController: false), .stateChanged(.stopped)],
            "stopped": [],
        ]
        for (name, var m) in try Self.everyState() {
            let actions = m.stop()
            if name == "playing" {
                guard case .stopStreaming = actions.first else { Issue.record("\(actions)"); continue }
                #expect(Array(actions.dropFirst()) == [.stopSpeakers(streamId: Self.stream, ids: [1, 2], reportErrors: true, afterAnotherController: false),
                                                       .stateChanged(.stopped)])
            } else {
                #expect(actions == expected[name], "\(name)")
            }
            #expect(m.playerState == (name == "initialized" ? .initialized : .stopped), "\(name)")
            #expect(m.streamId == 0)
            #expect(m.receivingIds.isEmpty)
        }
    }

    @Test func anotherControllersStopStopsTheOthersUnlessTheEndWasSent() throws {
        var m = Self.machine(members: [1, 2, 3])
        let run = try Self.playing(&m)
        #expect(m.speakerStopped(2, streamId: Self.stream &+ 1) == [])
        #expect(m.speakerStopped(2, streamId: Self.stream) == [
            .stopStreaming(run: run),
            .stopSpeakers(streamId: Self.stream, ids: [1, 3], reportErrors: true, afterAnotherController: true),
            .stateChanged(.stopped)])
        #expect(m.speakerStopped(1, streamId: Self.stream) == [])

        var n = Self.machine()
        let r = try Self.playing(&n)
        var source = Source(next: 0, end: 480)
        #expect(try Self.wake(&n, run: r, now: 100 * Self.ms, &source).packets.last?.packet.endOfStream == true)
        #expect(n.speakerStopped(1, streamId: Self.stream) == [])
        #expect(n.playerState == .playing)
    }

    @Test func closeStopsAndForgetsTheMembers() throws {
        var m = Self.machine()
        _ = try Self.playing(&m)
        #expect(m.close().last == .stateChanged(.stopped))
        #expect(m.members.isEmpty)
        #expect(m.close() == [])
    }

    // MARK: Members

    @Test func removingTheLastReceivingMemberStopsWithoutTellingItOthersPlayOn() throws {
        var m = Self.machine()
        let run = try Self.playing(&m)
        #expect(m.memberRemoved(1, stopIfLast: true) == [])
        #expect(m.receivingIds == [2])
        #expect(m.members == [2])
        #expect(m.memberRemoved(2, stopIfLast: false) == [])
        #expect(m.playerState == .playing)
        _ = m.memberAdded(2)
        #expect(m.memberRemoved(2, stopIfLast: true) == [.stopStreaming(run: run), .stateChanged(.stopped)])
        #expect(m.playerState == .stopped)
        #expect(m.memberRemoved(2, stopIfLast: true) == [])
        #expect(m.memberRemoved(42, stopIfLast: true) == [])
    }

    @Test func removingEveryMemberWhileStartingStopsTheStart() throws {
        var m = Self.machine()
        let (id, _) = m.start(format: Self.format, startFrame: 0, title: "", kind: .localFile, now: 0)
        #expect(m.memberRemoved(1, stopIfLast: true) == [.stateChanged(.stopped)])
        #expect(throws: Refusal.notStarting) { try m.started(streamId: id, now: 0) }
    }

    @Test func aMemberAddedWhilePlayingIsAnnouncedToAndGetsThePacketsStillAhead() throws {
        var m = Self.machine(members: [1])
        let run = try Self.playing(&m)
        var source = Source(next: 0, end: 480_000)
        let sent = try Self.wake(&m, run: run, now: 100 * Self.ms, &source).packets.map(\.packet)
        #expect(m.memberAdded(1) == [.announce(to: 1, streamId: Self.stream)])  // re-added: the same order
        #expect(m.members == [1])
        #expect(m.memberAdded(2) == [.announce(to: 2, streamId: Self.stream)])
        #expect(m.members == [1, 2])
        #expect(m.memberStarted(2, streamId: Self.stream &+ 1, now: 0) == [])
        // At 250 ms the packets presented after 270 ms are still ahead.
        let actions = m.memberStarted(2, streamId: Self.stream, now: 250 * Self.ms)
        let ahead = sent.filter { $0.presentationTime > 270 * Self.ms }.map { $0.encode() }
        #expect(!ahead.isEmpty && ahead.count < sent.count)
        #expect(actions == [.speakerJoined(2), .sendHistory(to: 2, packets: ahead)])
        #expect(m.receivingIds == [1, 2])
    }

    @Test func aMemberJoiningAPausedStreamIsPausedAndOneAddedWhenNothingPlaysIsNotAnnouncedTo() throws {
        var m = Self.machine(members: [1])
        _ = try Self.playing(&m)
        _ = try m.pause(now: 0)
        #expect(m.memberAdded(2) == [.announce(to: 2, streamId: Self.stream)])
        #expect(m.memberStarted(2, streamId: Self.stream, now: 0) == [.speakerJoined(2), .pauseSpeakers(streamId: Self.stream, ids: [2])])
        for (name, var s) in try Self.everyState() where name == "initialized" || name == "stopped" || name == "starting" {
            #expect(s.memberAdded(9) == [], "\(name)")
            if name != "starting" { #expect(s.memberStarted(9, streamId: Self.stream, now: 0) == [], "\(name)") }
            #expect(s.members.last == 9)
        }
    }

    // MARK: Recovery

    @Test func resendRequestsGetThePacketsStillHeldAndNotDueAndAreCounted() throws {
        var m = Self.machine()
        let run = try Self.playing(&m)
        var source = Source(next: 0, end: 480_000)
        let sent = try Self.wake(&m, run: run, now: 100 * Self.ms, &source).packets.map(\.packet)
        #expect(sent.count >= 4)
        let request = try ResendRequest(streamId: Self.stream, sequences: [1, 3, 5_000])
        // At 0 every packet is ahead; 5000 was never sent.
        #expect(m.resendRequested(request, by: 1, now: 0) == [sent[1].encode(), sent[3].encode()])
        #expect(m.recovery == PlaybackMachine.Recovery(requested: 3, resent: 2, unavailable: 1))
        // Once due, not sent again.
        #expect(m.resendRequested(request, by: 1, now: sent[3].presentationTime) == [])
        #expect(m.recovery == PlaybackMachine.Recovery(requested: 6, resent: 2, unavailable: 4))
        // Another stream's, or asked by a member that does not receive: nothing, not counted.
        #expect(m.resendRequested(try ResendRequest(streamId: Self.stream &+ 1, sequences: [1]), by: 1, now: 0) == [])
        #expect(m.resendRequested(request, by: 42, now: 0) == [])
        #expect(m.recovery.requested == 6)
        // Packets 1 s past are forgotten.
        _ = try Self.wake(&m, run: run, now: 1_500 * Self.ms, &source)
        #expect(m.resendRequested(try ResendRequest(streamId: Self.stream, sequences: [0]), by: 1, now: 0) == [])
        #expect(m.recovery.unavailable == 5)
    }

    // MARK: Every event in every state

    /// Every event, in every state, for another stream or a member that is not one: no trap, no action, nothing
    /// changed.
    @Test func eventsThatDoNotApplyChangeNothing() throws {
        let other = Self.stream &+ 1
        for (name, m) in try Self.everyState() {
            var c = m
            #expect(c.speakerPaused(1, streamId: other, now: 0) == [], "\(name)")
            #expect(c.speakerResumed(77, streamId: other, now: 0) == [], "\(name)")
            #expect(c.speakerStopped(1, streamId: other) == [], "\(name)")
            #expect(c.speakerEnded(1, streamId: other) == [], "\(name)")
            #expect(c.memberStarted(1, streamId: other, now: 0) == [], "\(name)")
            #expect(c.memberStarted(77, streamId: Self.stream, now: 0) == [], "\(name)")
            #expect(c.resumeGraceEnded(epoch: 999, now: 0) == [], "\(name)")
            #expect(c.step(run: 999, now: 0) == .finish([]), "\(name)")
            c.sourceRead(run: 999, [1, 2])
            #expect(c.sourceFailed(run: 999, category: .device, message: "") == [], "\(name)")
            #expect(c.resendRequested(try ResendRequest(streamId: other, sequences: [0]), by: 1, now: 0) == [], "\(name)")
            #expect(c.memberRemoved(77, stopIfLast: false) == [], "\(name)")
            #expect(c.playerState == m.playerState, "\(name)")
            #expect(c.streamId == m.streamId, "\(name)")
            #expect(c.members == m.members, "\(name)")
            #expect(c.receivingIds == m.receivingIds, "\(name)")
            #expect(c.recovery == m.recovery, "\(name)")
        }
    }

    /// The speakers' events for the stream itself, in the states where they do not apply.
    @Test func theStreamsOwnEventsOutsideTheStatesTheyApplyInChangeNothing() throws {
        for (name, m) in try Self.everyState() {
            var c = m
            if name != "playing" {
                #expect(c.speakerPaused(1, streamId: Self.stream, now: 0) == [], "\(name)")
                #expect(c.speakerEnded(1, streamId: Self.stream) == [], "\(name)")
            }
            if name != "paused" {
                #expect(c.speakerResumed(1, streamId: Self.stream, now: 0) == [], "\(name)")
            }
            if name != "playing" && name != "paused" {
                #expect(c.speakerStopped(1, streamId: Self.stream) == [], "\(name)")
            }
            #expect(c.playerState == m.playerState, "\(name)")
            #expect(c.streamId == m.streamId, "\(name)")
        }
    }
}

/// The speaker's gain: `PCM.scale` (in place, the renderer's) gives what `PCM.scaled` gives.
struct PCMGainTests {
    @Test(arguments: [SampleFormat.s16le, .s24le])
    func scaleInPlaceEqualsScaled(_ format: SampleFormat) {
        var rng = SystemRandomNumberGenerator()
        let bytes = (0..<(format.bytesPerSample * 64)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            + (format == .s16le ? [0x00, 0x80, 0xFF, 0x7F] : [0x00, 0x00, 0x80, 0xFF, 0xFF, 0x7F])  // the extremes
        for volume in [-1, 0, 1, 17, 25, 49, 50, 51] {
            var inPlace = bytes
            PCM.scale(&inPlace, volume: volume, format: format)
            #expect(inPlace == PCM.scaled(bytes[...], volume: volume, format: format), "volume \(volume)")
        }
    }
}
