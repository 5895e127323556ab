import Failure
import Simulator
import SpeakerPlayback
import SpeakerSession
import SpeakerSimulator
import Support
import Synchronization
import TestSupport
import Testing
import Transport

/// A link that drops the controller's clock-sync requests on their way to the speaker (everything else passes): the
/// speaker's clock is never measured.
final class ClockSyncDropped: Transport {
    let inner: any Transport
    private let deframer = Mutex(ControlDeframer())

    init(_ inner: any Transport) { self.inner = inner }

    var peerDescription: String { inner.peerDescription }
    var framing: LinkFraming { inner.framing }

    func send(_ bytes: [UInt8]) async throws {
        let kept = deframer.withLock { d -> [UInt8] in
            d.append(bytes)
            var out: [UInt8] = []
            while let output = d.next() {
                if case let .frame(frame) = output, frame.type != RequestType.clockSync.rawValue { out += frame.encode() }
            }
            return out
        }
        if !kept.isEmpty { try await inner.send(kept) }
    }

    func receive() async throws -> [UInt8] { try await inner.receive() }
    func close() async { await inner.close() }
}

/// A source that never gives a frame (a stalled transfer): only cancellation ends its read.
final class StalledSource: PCMSource {
    let format: AudioFormat
    var totalFrames: UInt64? { nil }
    var isSeekable: Bool { false }

    init(format: AudioFormat) { self.format = format }

    func read(maxFrames: Int) async throws -> [UInt8] {
        let (never, continuation) = AsyncStream.makeStream(of: Int.self)
        defer { continuation.finish() }
        for await _ in never {}
        throw CancellationError()
    }

    func seek(toFrame frame: UInt64) async throws {}
}

/// A stream that cannot go back but can start later (an HTTP source: requested again, decoded and dropped up to the
/// start): where it was asked to start.
final class StartsLaterSource: PCMSource {
    let signal: GeneratedSignal
    let seeks = Mutex<[UInt64]>([])
    var format: AudioFormat { signal.format }
    var totalFrames: UInt64? { signal.totalFrames }
    var isSeekable: Bool { false }
    var canStartLater: Bool { true }

    init(_ signal: GeneratedSignal) { self.signal = signal }

    func read(maxFrames: Int) async throws -> [UInt8] { try await signal.read(maxFrames: maxFrames) }
    func seek(toFrame frame: UInt64) async throws {
        seeks.withLock { $0.append(frame) }
        try await signal.seek(toFrame: frame)
    }
}

/// Speakers and a player on one `ManualClock`: the speakers' DAC clocks read it and their render pumps (so their audio
/// timeouts) sleep on it; the player's timeline, streaming loop, sync timeout, resume grace and reconnection pauses are
/// on it. The control links are in memory and the player knows no host for them, so it sends no audio: nothing here
/// depends on UDP's or the machine's timing, only on the virtual time the test moves.
final class VirtualRig: Sendable {
    /// Reconnection attempts the player made, and the sessions they opened.
    final class Reconnects: Sendable {
        let state = Mutex((attempts: 0, opened: [SpeakerSession]()))
    }

    let clock: ManualClock
    let server: SimulatedDeviceServer<SimulatedSpeaker>
    let player: SpeakerPlayer
    /// The player's sessions, one per speaker, in order.
    let sessions: [SpeakerSession]
    let reconnects: Reconnects

    init(clock: ManualClock, server: SimulatedDeviceServer<SimulatedSpeaker>, player: SpeakerPlayer, sessions: [SpeakerSession],
         reconnects: Reconnects) {
        self.clock = clock
        self.server = server
        self.player = player
        self.sessions = sessions
        self.reconnects = reconnects
    }

    var speakers: [SimulatedSpeaker] { server.devices }
    var ids: [UInt64] { speakers.map(\.deviceId) }
    var attempts: Int { reconnects.state.withLock { $0.attempts } }

    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)

    /// A session to speaker `k` over a new in-memory link (hello done; replies come at once: a long timeout).
    static func open(_ server: SimulatedDeviceServer<SimulatedSpeaker>, _ k: Int, droppingClockSync: Bool = false) async throws -> SpeakerSession {
        let (a, b) = InMemoryTransport.pair()
        try server.serve(link: b, onDevice: k)
        return try await SpeakerSession.open(transport: droppingClockSync ? ClockSyncDropped(a) : a, address: "speaker \(k)",
                                             options: RequestOptions(timeout: .seconds(30)))
    }

    /// `count` speakers (audio timeout `audioTimeout` ns), each in the playback session and a member of the player.
    static func start(_ count: Int, audioTimeout: UInt64 = 60_000_000_000, options: PlayerOptions = PlayerOptions(),
                      droppingClockSync: Bool = false) async throws -> VirtualRig {
        let clock = ManualClock()
        let speakers = (0..<count).map { k in
            SimulatedSpeaker(.init(identity: .simulated(index: k, seed: 33),
                                   clock: DACClock(offset: Int64(k + 1) * 1_500_000_000, source: TimeSource(clock: clock)),
                                   audioTimeout: audioTimeout), index: k)
        }
        let server = try SimulatedDeviceServer(devices: speakers)
        // The render pump starts with the audio socket (nothing is sent to it here).
        for s in speakers { s.startAudio(on: try UDPSocket.bind(host: "127.0.0.1", port: 0)) }
        let reconnects = Reconnects()
        let player = try SpeakerPlayer(options: options, clock: clock, reconnect: { lost in
            reconnects.state.withLock { $0.attempts += 1 }
            let k = speakers.firstIndex { $0.deviceId == lost.deviceId }!
            let s = try await open(server, k)
            reconnects.state.withLock { $0.opened.append(s) }
            return s
        })
        var sessions: [SpeakerSession] = []
        for k in 0..<count {
            let s = try await open(server, k, droppingClockSync: droppingClockSync)
            try await s.joinSession()
            await player.add(s, volume: 50)
            sessions.append(s)
        }
        return VirtualRig(clock: clock, server: server, player: player, sessions: sessions, reconnects: reconnects)
    }

    func close() async {
        await player.close()
        for s in sessions + reconnects.state.withLock({ $0.opened }) { await s.close() }
        await server.shutdown()
    }
}

extension PlayerEventLog {
    /// The events matching, in order.
    func matching(_ match: (PlayerEvent) -> Bool) -> [PlayerEvent] { all.filter(match) }

    /// Where the first event matching is (nil: none).
    func index(_ match: (PlayerEvent) -> Bool) -> Int? { all.firstIndex(where: match) }

    /// The state changes, in order.
    var states: [PlayerState] { all.compactMap { if case let .stateChanged(s) = $0 { s } else { nil } } }
}

func isSpeakerError(_ e: PlayerEvent) -> Bool { if case .speakerError = e { true } else { false } }

/// The player's shell and the simulated speakers' on virtual time (issue 17 §4): every timer and wait is on the
/// `ManualClock` the test advances, and each check is made at a known virtual time, never after a sleep. What stays on
/// the real clock (sync and fidelity over real sockets) is `LivePlaybackTests`.
@Suite("Player and speakers on a manual clock")
struct VirtualClockPlayerTests {
    static let format = VirtualRig.format

    /// A speaker whose clock-sync requests never arrive: play waits for its clock map exactly the sync timeout (3 s
    /// of the player's clock), then reports `clock-not-synchronized` for it once and fails, nothing started.
    @Test func playGivesUpOnAnUnsynchronisedSpeakerAfterTheSyncTimeout() async throws {
        try await withTimeLimit {
            let rig = try await VirtualRig.start(1, droppingClockSync: true)
            let events = try await PlayerEventLog(rig.player)
            let player = rig.player
            let play = Task { try await player.play(GeneratedSignal(format: Self.format, seconds: 5, seed: 1)) }
            try await waitUntil("the sync timeout's timer") { rig.clock.deadlines.contains(.seconds(3)) }
            rig.clock.advance(by: .milliseconds(2999))
            // Just before it: the speaker's pump ran at 2.999 s, the timeout is still the one pending at 3 s.
            try await waitUntil("the speaker's pump at 2.999 s") { rig.clock.deadlines.contains(.milliseconds(3004)) }
            #expect(rig.clock.deadlines.contains(.seconds(3)))
            #expect(!events.all.contains(where: isSpeakerError), "\(events.all)")
            rig.clock.advance(by: .milliseconds(1))
            let e = await #expect(throws: SpeakerSessionError.self) { try await play.value }
            #expect(e?.code == .notConnected, "\(String(describing: e))")
            try await events.waitFor("the speaker's error") { isSpeakerError($0) }
            let errors = events.matching(isSpeakerError)
            #expect(errors.count == 1 && errors.allSatisfy {
                if case .speakerError(rig.ids[0], .clockNotSynchronized, _) = $0 { true } else { false }
            }, "\(events.all)")
            #expect(!events.states.contains(.playing) && !events.all.contains(.speakerJoined(deviceId: rig.ids[0])), "\(events.all)")
            #expect(await rig.player.receivingIds.isEmpty)
            await rig.close()
        }
    }

    /// A stalled source: the speaker gets no audio, and gives up after its audio timeout (3 s of its clock: still
    /// playing at 2.99 s, stopped at 3.01 s) with `audio-underrun`; the player reports that once, then stopped.
    @Test func aSpeakerWithoutAudioGivesUpAfterItsTimeoutAndThePlayerReportsIt() async throws {
        try await withTimeLimit {
            let rig = try await VirtualRig.start(1, audioTimeout: 3_000_000_000)
            let events = try await PlayerEventLog(rig.player)
            try await rig.player.play(StalledSource(format: Self.format))
            #expect(await rig.player.state == .playing)
            rig.clock.advance(by: .milliseconds(2990))
            try await waitUntil("the speaker's pump at 2.99 s") { rig.clock.deadlines.contains(.milliseconds(2995)) }
            #expect(try await rig.sessions[0].status().state == .playing)
            #expect(!events.all.contains(where: isSpeakerError), "\(events.all)")
            rig.clock.advance(by: .milliseconds(20))
            try await events.waitFor("the player follows the stop") { $0 == .stateChanged(.stopped) }
            let underruns = events.matching { if case .speakerError(rig.ids[0], .audioUnderrun, _) = $0 { true } else { false } }
            #expect(underruns.count == 1 && events.matching(isSpeakerError).count == 1, "\(events.all)")
            #expect(events.index(isSpeakerError)! < events.index { $0 == .stateChanged(.stopped) }!, "\(events.all)")
            #expect(events.states == [.initialized, .playing, .stopped], "\(events.all)")
            #expect(try await rig.sessions[0].status().state == .stopped)
            await rig.close()
        }
    }

    /// Another controller pauses both speakers, resumes one, and stops one: the player shows paused once, waits the
    /// resume grace (300 ms of its clock: still paused at 299 ms) for the other speaker before it plays on, and on the
    /// stop stops the speaker the stop has not reached itself, before it shows stopped.
    @Test func anotherControllersPauseResumeAndStopAreFollowedInOrder() async throws {
        try await withTimeLimit {
            let rig = try await VirtualRig.start(2)
            let events = try await PlayerEventLog(rig.player)
            try await rig.player.play(GeneratedSignal(format: Self.format, seconds: 30, seed: 2))
            let stream = await rig.player.streamId
            let other = [try await VirtualRig.open(rig.server, 0), try await VirtualRig.open(rig.server, 1)]
            for s in other { try await s.pause(streamId: stream) }
            try await waitUntil("the player follows the pause") { await rig.player.state == .paused }
            try await other[0].resume(streamId: stream)
            try await waitUntil("the resume grace's timer") { rig.clock.deadlines.contains(.milliseconds(300)) }
            rig.clock.advance(by: .milliseconds(299))
            #expect(await rig.player.state == .paused)
            #expect(rig.clock.deadlines.contains(.milliseconds(300)), "\(rig.clock.deadlines)")
            rig.clock.advance(by: .milliseconds(1))
            try await waitUntil("the player plays on after the grace") { await rig.player.state == .playing }
            try await other[0].stop(streamId: stream)
            try await waitUntil("the player follows the stop") { await rig.player.state == .stopped }
            #expect(try await other[1].status().state == .stopped)
            #expect(events.states == [.initialized, .playing, .paused, .playing, .stopped], "\(events.all)")
            #expect(events.matching { $0 == .speakerJoined(deviceId: rig.ids[0]) || $0 == .speakerJoined(deviceId: rig.ids[1]) }.count == 2)
            #expect(!events.all.contains(where: isSpeakerError), "\(events.all)")
            for s in other { await s.close() }
            await rig.close()
        }
    }

    /// A speaker powered off mid-stream is reported lost once while the other plays on; the player tries to reconnect
    /// every 500 ms of its clock (one attempt at 0.5 s, none more before 1 s), and the attempt after the speaker is
    /// back rejoins it to the stream.
    @Test func aVanishingSpeakerIsReportedThenReconnectedEveryIntervalUntilItRejoins() async throws {
        try await withTimeLimit {
            let rig = try await VirtualRig.start(2)
            let events = try await PlayerEventLog(rig.player)
            try await rig.player.play(GeneratedSignal(format: Self.format, seconds: 30, seed: 3))
            let gone = rig.speakers[1], id = gone.deviceId
            let joined = { events.matching { $0 == .speakerJoined(deviceId: id) }.count }
            try await waitUntil("speaker 1 joined") { joined() == 1 }
            await gone.powerOff()
            try await events.waitFor("speaker 1 lost") { if case .speakerLost(id, _) = $0 { true } else { false } }
            try await waitUntil("the first reconnection pause") { rig.clock.deadlines.contains(.milliseconds(500)) }
            #expect(rig.attempts == 0)
            #expect(await rig.player.state == .playing)
            #expect(await rig.player.receivingIds == [rig.ids[0]])
            rig.clock.advance(by: .milliseconds(500))
            try await waitUntil("one attempt, then the next pause") { rig.attempts == 1 && rig.clock.deadlines.contains(.seconds(1)) }
            rig.clock.advance(by: .milliseconds(499))
            #expect(rig.attempts == 1)
            gone.powerOn()
            rig.clock.advance(by: .milliseconds(1))
            try await events.waitFor("speaker 1 rejoins") { _ in joined() == 2 }
            #expect(rig.attempts == 2)
            let lost = events.matching { if case .speakerLost = $0 { true } else { false } }
            #expect(lost.count == 1, "\(events.all)")
            let lostAt = events.index { if case .speakerLost = $0 { true } else { false } }!
            #expect(events.all[lostAt...].contains(.speakerJoined(deviceId: id)), "\(events.all)")
            #expect(events.states == [.initialized, .playing], "\(events.all)")
            #expect(await Set(rig.player.receivingIds) == Set(rig.ids))
            let back = try await VirtualRig.open(rig.server, 1)
            #expect(try await back.status().state == .playing)
            await back.close()
            await rig.close()
        }
    }

    /// A source that fails after 1.25 s (60,000 frames): it is reported once with where it stopped, before the end;
    /// no speaker hears the end (no audio goes out), so the stream ends on the player's timeline the end grace (2 s)
    /// after its last frame — at the first wake of the streaming loop (every 40 ms) past 0.2 + 1.25 + 2 s, 3.48 s — and
    /// the speaker is stopped.
    @Test func aFailingSourceIsReportedWhereItStoppedAndTheUnheardEndComesOnTheTimeline() async throws {
        try await withTimeLimit {
            let tick = Duration.milliseconds(40)
            let rig = try await VirtualRig.start(1, options: PlayerOptions(tick: tick))
            let events = try await PlayerEventLog(rig.player)
            let signal = GeneratedSignal(format: Self.format, seconds: 30, seed: 4)
            try await rig.player.play(LivePlaybackTests.FailingSource(signal, failingAfter: 60_000), title: "breaks")
            let stopped = { events.all.contains(.stateChanged(.stopped)) }
            var t = Duration.zero
            // One wake of the streaming loop at a time: the clock moves once the loop sleeps again.
            while t < .seconds(5) {
                try await waitUntil("the streaming loop's wake after \(t)") { rig.clock.deadlines.contains(t + tick) || stopped() }
                if stopped() { break }
                rig.clock.advance(by: tick)
                t += tick
            }
            #expect(t == .milliseconds(3480), "ended at \(t)")
            let failures = events.matching { if case .sourceFailed = $0 { true } else { false } }
            #expect(failures == [.sourceFailed(seconds: 1.25, category: .device, message: "the bytes ran out")], "\(events.all)")
            #expect(events.matching { if case .time = $0 { true } else { false } } == [.time(seconds: 1)], "\(events.all)")
            let failed = events.index { if case .sourceFailed = $0 { true } else { false } }
            let ended = events.index { $0 == .ended }
            #expect(failed != nil && ended != nil && failed! < ended!, "\(events.all)")
            #expect(events.states == [.initialized, .playing, .stopped], "\(events.all)")
            #expect(!events.all.contains(where: isSpeakerError), "\(events.all)")
            #expect(try await rig.sessions[0].status().state == .stopped)
            await rig.close()
        }
    }

    /// Issue 30 item 9: the only speaker lost at 0 s of a 10 s stream (the player reconnects to it in vain): the
    /// playback waits 3 s (`lostTimeout`) for it — still playing at the wake at 2.94 s — then stops at the wake at
    /// 3.01 s (every 70 ms), with `every speaker was lost` and no `ended`.
    @Test func losingTheOnlySpeakerStopsThePlaybackAfterTheLostTimeoutWithoutEnded() async throws {
        try await withTimeLimit {
            let tick = Duration.milliseconds(70)  // no wake on a reconnection attempt's time (every 500 ms)
            let rig = try await VirtualRig.start(1, options: PlayerOptions(buffer: .milliseconds(400), tick: tick))
            let events = try await PlayerEventLog(rig.player)
            try await rig.player.play(GeneratedSignal(format: Self.format, seconds: 10, seed: 6))
            let id = rig.ids[0]
            await rig.speakers[0].powerOff()
            try await events.waitFor("the speaker lost") { if case .speakerLost(id, _) = $0 { true } else { false } }
            let stopped = { events.all.contains(.stateChanged(.stopped)) }
            var t = Duration.zero
            while t < .seconds(10) {
                try await waitUntil("the streaming loop's wake after \(t)") { rig.clock.deadlines.contains(t + tick) || stopped() }
                if stopped() { break }
                rig.clock.advance(by: tick)
                t += tick
            }
            #expect(t == .milliseconds(3010), "stopped at \(t)")
            #expect(await rig.player.interruption?.code == .disconnected)
            #expect(!events.all.contains(.ended), "\(events.all)")
            #expect(events.states == [.initialized, .playing, .stopped], "\(events.all)")
            await rig.close()
        }
    }

    /// Issue 30 item 9: another controller (the hub) plays its stream on the player's only speaker: the player stops
    /// at once — no more streaming, no `ended` — with `interrupted`, and the other stream plays on.
    @Test func anotherControllersStreamOnTheOnlySpeakerStopsThePlaybackAtOnce() async throws {
        try await withTimeLimit {
            let rig = try await VirtualRig.start(1)
            let events = try await PlayerEventLog(rig.player)
            try await rig.player.play(GeneratedSignal(format: Self.format, seconds: 30, seed: 7))
            let other = try await VirtualRig.open(rig.server, 0)
            try await other.joinSession()
            try await other.setClockMap(ClockMap(controllerReference: 1_000_000_000, speakerReference: 1_000_000_000, rate: 0))
            try await other.play(streamId: 0x1_0000, format: Self.format, source: .localFile, title: "hub")
            try await events.waitFor("the player stops") { $0 == .stateChanged(.stopped) }
            let interruption = await rig.player.interruption
            #expect(interruption?.code == .interrupted, "\(String(describing: interruption))")
            #expect(!events.all.contains(.ended), "\(events.all)")
            #expect(events.states == [.initialized, .playing, .stopped], "\(events.all)")
            let status = try await other.status()
            #expect(status.state == .playing && status.streamId == 0x1_0000)
            await other.close()
            await rig.close()
        }
    }

    /// Issue 30 item 12: `--from` on a source that cannot go back but can start later (an http URL) is not refused:
    /// the source is asked to start at the frame, and the stream plays from there.
    @Test func aSourceThatCanStartLaterPlaysFromLater() async throws {
        try await withTimeLimit {
            let rig = try await VirtualRig.start(1)
            let source = StartsLaterSource(GeneratedSignal(format: Self.format, seconds: 10, seed: 8))
            try await rig.player.play(source, from: 8)
            #expect(source.seeks.withLock { $0 } == [8 * 48_000])
            #expect(await rig.player.state == .playing)
            await rig.close()
        }
    }

    /// The controller that started a stream disconnecting (killed): the speaker stops it and tells the other
    /// controllers `playback-interrupted`, then stopped. (In process: nothing here is timing.)
    @Test func theControllerDisconnectingStopsTheSpeakerWhichReportsIt() async throws {
        try await withTimeLimit {
            let clock = ManualClock()
            let speaker = SimulatedSpeaker(.init(identity: .simulated(index: 0, seed: 34), clock: DACClock(source: TimeSource(clock: clock))))
            let server = try SimulatedDeviceServer(devices: [speaker])
            let observer = try await VirtualRig.open(server, 0)
            let log = await EventLog(observer)
            let streamer = try await VirtualRig.open(server, 0)
            try await streamer.joinSession()
            try await streamer.setClockMap(ClockMap(controllerReference: 1_000_000_000, speakerReference: 1_000_000_000, rate: 0))
            try await streamer.play(streamId: 5, format: Self.format, source: .localFile, title: "t")
            try await log.waitFor(.playbackStateChanged(streamId: 5, state: .playing))
            await streamer.close()  // as if the controller were killed
            try await log.waitFor(.playbackStateChanged(streamId: 5, state: .stopped))
            let interrupted = log.all.filter { if case .error(_, .playbackInterrupted, _) = $0 { true } else { false } }
            #expect(interrupted.count == 1, "\(log.all)")
            #expect(log.all.firstIndex { if case .error = $0 { true } else { false } }! < log.all.firstIndex(of: .playbackStateChanged(streamId: 5, state: .stopped))!)
            #expect(try await observer.status().state == .stopped)
            await observer.close()
            await server.shutdown()
        }
    }
}
