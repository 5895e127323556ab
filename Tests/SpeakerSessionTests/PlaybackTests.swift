import Failure
import Foundation
import SpeakerPlayback
import SpeakerSession
import SpeakerSimulator
import Synchronization
import TestSupport
import Testing
import Transport

/// Sync and fidelity on virtual time: the controller's schedule and clock tracking, the codec and the speakers'
/// renderers, exact to the nanosecond. The simulation and the sample-by-sample analysis are seconds of computation in
/// a debug build: they run on the blocking executor (`computed`), never on the cooperative pool, and the checks then
/// read their results.
@Suite("Playback on virtual time")
struct VirtualPlaybackTests {
    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)

    @Test func speakersWithDifferentDriftPlayInSyncAndSampleForSample() async throws {
        let drifts: [Double] = [-400, -120, 0, 250, 480]
        var config = VirtualPlayback.Configuration(speakers: drifts.enumerated().map { k, ppm in
            VirtualPlayback.Speaker(clock: DACClock(offset: Int64(k) * 3_700_000_123, driftPPM: ppm))
        })
        config.format = Self.format
        config.seconds = 6
        let (r, spreads, fidelity) = try await computed(config) { config in
            let source = GeneratedSignal(format: Self.format, seconds: 6, seed: 3)
            let r = VirtualPlayback(config, source: source).run()
            let spreads = PlaybackAnalysis.spreads(r.speakers.map(\.log), frames: 0..<288_000, stride: 480)
            let fidelity = r.speakers.map { s in
                let f = PlaybackAnalysis.fidelity(s.log, pcm: s.pcm, source: source)
                return (exact: f.isExact(given: s.log.statistics), description: "\(f)")
            }
            return (r, spreads, fidelity)
        }
        #expect(spreads.count > 500)
        #expect(PlaybackAnalysis.percentile(spreads, 99) <= 100_000, "p99 spread \(PlaybackAnalysis.percentile(spreads, 99)) ns")
        for (k, s) in r.speakers.enumerated() {
            #expect(fidelity[k].exact, "speaker \(k): \(fidelity[k].description), \(s.log.statistics)")
            #expect(s.log.statistics.renderedFrames >= 287_000, "speaker \(k) rendered \(s.log.statistics.renderedFrames)")
            // About drift × 6 s × 48000 corrections (a drifting clock must be corrected, a true one hardly).
            let expected = abs(drifts[k]) * 1e-6 * 6 * 48_000
            #expect(Double(s.log.statistics.correctedSamples) >= expected * 0.7, "speaker \(k): \(s.log.statistics)")
            #expect(Double(s.log.statistics.correctedSamples) <= expected * 1.3 + 20, "speaker \(k): \(s.log.statistics)")
            // First sound within 300 ms of play.
            #expect(s.firstOut! - r.playAt <= 300_000_000)
        }
    }

    @Test func jitterAndLossAreAbsorbedAndCounted() async throws {
        let audio = LinkJitter(maximum: 20_000_000, probability: 1, loss: 0.02)
        let control = LinkJitter(maximum: 20_000_000, probability: 0.3, floor: 50_000)
        var config = VirtualPlayback.Configuration(speakers: [-300.0, 300].map {
            VirtualPlayback.Speaker(clock: DACClock(offset: 1_000_000_000, driftPPM: $0), audio: audio, control: control)
        })
        config.format = Self.format
        config.seconds = 5
        config.recovery = false  // protocol version 1: the lost packets play as silence
        let (r, spreads, exact) = try await computed(config) { config in
            let source = GeneratedSignal(format: Self.format, seconds: 5, seed: 4)
            let r = VirtualPlayback(config, source: source).run()
            let spreads = PlaybackAnalysis.spreads(r.speakers.map(\.log), frames: 0..<240_000, stride: 480)
            let exact = r.speakers.map { PlaybackAnalysis.fidelity($0.log, pcm: $0.pcm, source: source).isExact(given: $0.log.statistics) }
            return (r, spreads, exact)
        }
        #expect(PlaybackAnalysis.percentile(spreads, 99) <= 100_000, "p99 spread \(PlaybackAnalysis.percentile(spreads, 99)) ns")
        for (k, s) in r.speakers.enumerated() {
            let stats = s.log.statistics
            #expect(stats.lostPackets > 0, "\(stats)")
            #expect(stats.lostFrames > 0, "\(stats)")
            #expect(exact[k], "\(stats)")
        }
    }

    /// With 2 % of the audio datagrams lost (retransmissions too) and a jittery control path, the speakers ask for
    /// what they miss (§7.1) and play the source sample for sample: the only frames not equal to the source are the
    /// counted drift corrections.
    @Test func lostPacketsAreRecoveredSoTheOutputEqualsTheSource() async throws {
        let audio = LinkJitter(maximum: 20_000_000, probability: 1, loss: 0.02)
        let control = LinkJitter(maximum: 20_000_000, probability: 0.3, floor: 50_000)
        var config = VirtualPlayback.Configuration(speakers: [-300.0, 0, 300].map {
            VirtualPlayback.Speaker(clock: DACClock(offset: 1_000_000_000, driftPPM: $0), audio: audio, control: control)
        })
        config.format = Self.format
        config.seconds = 10
        config.seed = 11
        let (r, fidelity) = try await computed(config) { config in
            let source = GeneratedSignal(format: Self.format, seconds: 10, seed: 6)
            let r = VirtualPlayback(config, source: source).run()
            return (r, r.speakers.map { PlaybackAnalysis.fidelity($0.log, pcm: $0.pcm, source: source) })
        }
        for (k, s) in r.speakers.enumerated() {
            let stats = s.log.statistics
            let report = "speaker \(k): \(stats), recovery \(s.recovery), \(s.resendRequests) requests, \(s.resentPackets) resent, \(fidelity[k])"
            // About 2 % of ~1340 packets were lost on the way, and every one came again in time.
            expectEveryLossRecovered(s, fidelity[k], atLeast: 10, report)
            #expect(s.resentPackets >= Int(s.recovery.missing), "\(report)")
            #expect(stats.renderedFrames + stats.skippedSamples == 480_000, "\(report)")
            #expect(fidelity[k].missingFrames == stats.skippedSamples, "\(report)")
        }
    }

    @Test func aSpeakerAddedDuringPlaybackJoinsInSyncWithinOneSecond() async throws {
        var config = VirtualPlayback.Configuration(speakers: [
            VirtualPlayback.Speaker(clock: DACClock(offset: 5_000_000_000, driftPPM: 200)),
            VirtualPlayback.Speaker(clock: DACClock(offset: 9_000_000_000, driftPPM: -350), joinsAfter: 2),
        ])
        config.format = Self.format
        config.seconds = 5
        let r = try await computed(config) { config in VirtualPlayback(config, source: GeneratedSignal(format: Self.format, seconds: 5, seed: 5)).run() }
        let joiner = r.speakers[1]
        let first = try! #require(joiner.firstOut)
        #expect(first - joiner.addedAt <= 1_000_000_000, "joined after \(Double(first - joiner.addedAt) / 1e6) ms")
        let firstFrame = joiner.log.firstSource!.sourceFrame
        // Joined 2 s after play, when frame (2 s − 200 ms buffer) × 48000 was heard, within a second.
        #expect(firstFrame > 86_400 && firstFrame < 86_400 + 48_000, "first frame \(firstFrame)")
        let spreads = try await computed(r.speakers.map(\.log)) { logs in PlaybackAnalysis.spreads(logs, frames: firstFrame..<240_000, stride: 480) }
        #expect(spreads.count > 200)
        #expect(PlaybackAnalysis.percentile(spreads, 100) <= 100_000, "max spread \(PlaybackAnalysis.percentile(spreads, 100)) ns")
    }

    @Test func renderLogTextRoundTrips() throws {
        var config = VirtualPlayback.Configuration(speakers: [VirtualPlayback.Speaker(clock: DACClock(offset: 42, driftPPM: 123.5))])
        config.format = Self.format
        config.seconds = 1
        let r = VirtualPlayback(config, source: GeneratedSignal(format: Self.format, seconds: 1)).run()
        let log = r.speakers[0].log
        let back = try RenderLog(text: log.text())
        #expect(back.runs == log.runs)
        #expect(back.clock.offset == 42 && back.clock.driftPPM == 123.5)
        #expect(back.trueTime(ofSlot: 1000) == log.trueTime(ofSlot: 1000))
    }
}

/// Collects a player's events.
final class PlayerEventLog: Sendable {
    private final class Store: Sendable {
        let events = Mutex<[PlayerEvent]>([])
    }
    private let store = Store()
    private let task: Task<Void, Never>

    init(_ controller: SpeakerController) async throws {
        let stream = try await controller.playerEvents()
        let store = self.store
        task = Task { for await e in stream { store.events.withLock { $0.append(e) } } }
    }

    init(_ player: SpeakerPlayer) async throws {
        let stream = await player.playerEvents()
        let store = self.store
        task = Task { for await e in stream { store.events.withLock { $0.append(e) } } }
    }

    var all: [PlayerEvent] { store.events.withLock { $0 } }

    func waitFor(_ what: String, within seconds: Double = 20, _ match: @escaping (PlayerEvent) -> Bool) async throws {
        try await waitUntil(what, within: seconds) { all.contains(where: match) }
    }

    deinit { task.cancel() }
}

/// The live path: the player streaming UDP to simulated speakers on loopback, their renderers on the monotonic clock.
@Suite("Playback to simulated speakers on loopback", .serialized)
struct LivePlaybackTests {
    /// The live path's sync bound, in ns: 10 ms. Over real sockets and real threads on a loaded two-core machine the
    /// spread has been seen at 1...3 ms; the microsecond goal (p99 ≤ 100 µs) is asserted on virtual time
    /// (`VirtualPlaybackTests`) and measured live by `tuneup-bench speaker-sync` (a release build on an idle machine:
    /// p99 about 0.1 ms).
    static let liveSpreadBound: Double = 10_000_000

    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)

    static func start(_ count: Int, drift: Double = 300, jitter: LinkJitter = .none) async throws -> (SpeakerSimulation, SpeakerController) {
        let sim = try await SpeakerSimulation.start(
            count: count, clocks: { k in DACClock(offset: Int64(k + 1) * 2_500_000_000, driftPPM: k % 2 == 0 ? drift : -drift) },
            audioJitter: { _ in jitter }, keepsRenderLogs: true)
        let c = try await SpeakerController.connect(endpoints(sim))
        try await c.setVolumeAll(50)
        try await c.addAllToSession()
        return (sim, c)
    }

    /// Frames heard by both speakers' current logs, their spread p99 (ns).
    static func spreadP99(_ sim: SpeakerSimulation, from: UInt64 = 0) -> Double {
        let logs = sim.speakers.compactMap { $0.renderLogs.last?.log }
        let upper = logs.map { $0.sourceIndex().last.map { $0.sourceFrame + $0.count } ?? 0 }.min() ?? 0
        guard upper > from else { return .infinity }
        return PlaybackAnalysis.percentile(PlaybackAnalysis.spreads(logs, frames: from..<upper, stride: 480), 99)
    }

    @Test func playsToTheEndInSyncSampleForSampleWithEvents() async throws {
        try await withTimeLimit {
            let (sim, c) = try await Self.start(2)
            let events = try await PlayerEventLog(c)
            let source = GeneratedSignal(format: Self.format, seconds: 1.5, seed: 9)
            try await c.play(source, title: "signal")
            #expect(await c.playerState == .playing)
            // `.ended` comes before `.stopped` in the stream; the player ends at the first speaker's end, so the other
            // may still be rendering its last frames: wait until each has closed its stream.
            try await events.waitFor("the end") { $0 == .stateChanged(.stopped) }
            #expect(events.all.contains(.ended))
            #expect(events.all.contains(.time(seconds: 1)))
            try await waitUntil("every speaker rendered its end") { sim.speakers.allSatisfy { $0.streamFormat == nil } }
            #expect(await c.elapsed == nil)
            for speaker in sim.speakers {
                let (log, pcm) = try #require(speaker.renderLogs.last)
                let f = PlaybackAnalysis.fidelity(log, pcm: pcm, source: source)
                #expect(f.isExact(given: log.statistics), "\(f) \(log.statistics)")
                #expect(log.statistics.renderedFrames >= 71_000, "\(log.statistics)")
            }
            // Loopback on a loaded machine: the clock estimate is within a few hundred µs.
            #expect(Self.spreadP99(sim) <= Self.liveSpreadBound, "p99 spread \(Self.spreadP99(sim)) ns")
            await c.close()
            await sim.shutdown()
        }
    }

    /// Real sockets, 5 % of the audio datagrams lost and 0-20 ms of jitter on the way in (retransmissions too): the
    /// speakers (version 2) ask for what they miss, the player sends it again, and the recordings equal the source.
    @Test func lostPacketsAreAskedForAndResent() async throws {
        try await withTimeLimit {
            let (sim, c) = try await Self.start(2, jitter: LinkJitter(maximum: 20_000_000, loss: 0.05))
            let events = try await PlayerEventLog(c)
            let source = GeneratedSignal(format: Self.format, seconds: 3, seed: 12)
            try await c.play(source, title: "signal")
            try await events.waitFor("the end") { $0 == .ended }
            let player = await c.recoveryStatistics
            #expect(player.resent > 0, "\(player)")
            for speaker in sim.speakers {
                let (log, pcm) = try #require(speaker.renderLogs.last)
                let st = log.statistics
                let f = PlaybackAnalysis.fidelity(log, pcm: pcm, source: source)
                #expect(f.isExact(given: st) && f.mismatchedFrames == 0, "\(f) \(st)")
                // About 20 of 400 packets lost: recovered; a retransmission late on a loaded machine would play as
                // silence and count here (never seen; at most one packet's worth tolerated).
                #expect(st.recoveredPackets > 0, "\(st) \(player)")
                #expect(st.lostFrames <= 358, "\(st) \(player)")
            }
            await c.close()
            await sim.shutdown()
        }
    }

    @Test func aSecondControllerPausesResumesAndStopsThePlayback() async throws {
        try await withTimeLimit {
            let (sim, c) = try await Self.start(2)
            let source = GeneratedSignal(format: Self.format, seconds: 30, seed: 10)
            try await c.play(source)
            try await waitUntil("audio out", within: 10) { sim.speakers.allSatisfy { ($0.renderLogs.last?.log.statistics.renderedFrames ?? 0) > 4800 } }
            let other = try await SpeakerController.connect(endpoints(sim))
            try await other.pause()
            try await waitUntil("the player follows the pause", within: 10) { await c.playerState == .paused }
            let pausedAt = try #require(await c.elapsed)
            let rendered = sim.speakers.map { $0.renderLogs.last!.log.statistics.renderedFrames }
            try await other.resume()
            try await waitUntil("the player follows the resume", within: 10) { await c.playerState == .playing }
            try await waitUntil("audio again", within: 10) {
                zip(sim.speakers, rendered).allSatisfy { ($0.renderLogs.last?.log.statistics.renderedFrames ?? 0) > $1 + 9600 }
            }
            // The stream went on from where it paused (within the request's round trip), not from the start.
            for speaker in sim.speakers {
                let index = speaker.renderLogs.last!.log.sourceIndex()
                let resumedAt = index.first { Double($0.sourceFrame) / 48_000 >= pausedAt - 0.05 && $0.slot > index[0].slot + 1 }
                #expect(resumedAt != nil)
            }
            #expect(Self.spreadP99(sim, from: UInt64(pausedAt * 48_000) + 4800) <= Self.liveSpreadBound)
            try await other.setVolumeAll(10)
            // The other controller's stop reaches speaker 0 only so far (issue 19 defect 8: the player stopped
            // following at once and disconnected, and speaker 1 reported `playback-interrupted`): the player stops
            // speaker 1 itself before it says stopped.
            let ids = sim.speakers.map(\.deviceId)
            let watch = await EventLog(try await other.session(id: ids[1]))
            let first = try await other.session(id: ids[0])
            try await first.stop(streamId: try await first.status().streamId)
            try await waitUntil("the player follows the stop", within: 10) { await c.playerState == .stopped }
            #expect(try await other.session(id: ids[1]).status().state == .stopped)
            #expect(!watch.all.contains { if case .error(_, .playbackInterrupted, _) = $0 { true } else { false } })
            await #expect(throws: SpeakerSessionError.self) { try await other.pause() }
            await other.close()
            await c.close()
            await sim.shutdown()
        }
    }

    /// The player's own pause and resume, then another controller's, on loopback (version 5, docs/speaker-protocol.md
    /// §3.2): across both, each speaker plays every frame once, in order — the only frames left out are the ones its
    /// renderer counted (drift corrections, lost or late packets), none is played again — and the speakers are in sync
    /// after each resume.
    @Test func pausesAndResumesAreSampleExactOnEverySpeaker() async throws {
        try await withTimeLimit {
            let (sim, c) = try await Self.start(2)
            let source = GeneratedSignal(format: Self.format, seconds: 30, seed: 14)
            try await c.play(source)
            let other = try await SpeakerController.connect(endpoints(sim))
            let rendered = { sim.speakers.map { $0.renderLogs.last?.log.statistics.renderedFrames ?? 0 } }
            for pauser in [c, other] {
                let before = rendered()
                try await waitUntil("audio out", within: 10) { zip(rendered(), before).allSatisfy { $0 > $1 + 4_800 } }
                try await pauser.pause()
                try await waitUntil("the player follows the pause", within: 10) { await c.playerState == .paused }
                try await pauser.resume()
                try await waitUntil("the player follows the resume", within: 10) { await c.playerState == .playing }
            }
            let resumedFrame = UInt64((await c.elapsed ?? 0) * 48_000)
            let before = rendered()
            try await waitUntil("audio again", within: 10) { zip(rendered(), before).allSatisfy { $0 > $1 + 9_600 } }
            try await c.stop()
            for (k, speaker) in sim.speakers.enumerated() {
                let (log, pcm) = try #require(speaker.renderLogs.last)
                // Walk the frames in output order: a frame after a gap, or one at or before a frame already played.
                var next: UInt64?, gaps: UInt64 = 0, replayed: UInt64 = 0
                for run in log.runs where run.kind == .source {
                    if let n = next, run.sourceFrame > n { gaps += run.sourceFrame - n }
                    if let n = next, run.sourceFrame < n { replayed += min(n, run.sourceFrame + run.count) - run.sourceFrame }
                    next = max(next ?? 0, run.sourceFrame + run.count)
                }
                let st = log.statistics
                let counted = st.skippedSamples + st.lostFrames + st.lateFrames - st.lateFramesBeforeOutput
                #expect(replayed == 0 && gaps == counted, "speaker \(k): \(gaps) frames skipped (\(counted) counted), \(replayed) played again; \(st)")
                #expect(PlaybackAnalysis.fidelity(log, pcm: pcm, source: source).mismatchedFrames == 0)
            }
            #expect(Self.spreadP99(sim, from: resumedFrame + 4_800) <= Self.liveSpreadBound)
            await other.close()
            await c.close()
            await sim.shutdown()
        }
    }

    @Test func speakersAddedAndRemovedDuringPlayback() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 2, clocks: { k in DACClock(offset: Int64(k) * 1_000_000_000, driftPPM: k == 0 ? 150 : -220) },
                                                        keepsRenderLogs: true)
            let c = try await SpeakerController.connect(endpoints(sim))
            try await c.setVolumeAll(50)
            let ids = sim.speakers.map(\.deviceId)
            try await c.addToSession(ids[0])
            let events = try await PlayerEventLog(c)
            try await c.play(GeneratedSignal(format: Self.format, seconds: 30, seed: 11))
            try await waitUntil("speaker 0 plays", within: 10) { (sim.speakers[0].renderLogs.last?.log.statistics.renderedFrames ?? 0) > 9600 }
            let added = monotonicNanoseconds()
            try await c.addToSession(ids[1])
            try await events.waitFor("speaker 1 joins") { $0 == .speakerJoined(deviceId: ids[1]) }
            try await waitUntil("speaker 1 plays", within: 10) { (sim.speakers[1].renderLogs.last?.log.statistics.renderedFrames ?? 0) > 4800 }
            let log1 = sim.speakers[1].renderLogs.last!.log
            let firstOut = log1.trueTime(ofSlot: log1.firstSource!.slot)
            #expect(firstOut - Double(added) <= 1e9, "joined after \((firstOut - Double(added)) / 1e6) ms")
            try await waitUntil("both play on", within: 10) { (sim.speakers[1].renderLogs.last?.log.statistics.renderedFrames ?? 0) > 24_000 }
            #expect(Self.spreadP99(sim, from: log1.firstSource!.sourceFrame + 4800) <= Self.liveSpreadBound)
            try await c.removeFromSession(ids[0])
            #expect(await c.playerState == .playing)
            try await c.removeFromSession(ids[1])
            try await waitUntil("removing the last speaker stops", within: 10) { await c.playerState == .stopped }
            await c.close()
            await sim.shutdown()
        }
    }

    @Test func aSpeakerThatVanishesIsReportedAndRejoinsInSync() async throws {
        try await withTimeLimit {
            let (sim, c) = try await Self.start(2, drift: 250)
            let events = try await PlayerEventLog(c)
            try await c.play(GeneratedSignal(format: Self.format, seconds: 30, seed: 12))
            try await waitUntil("audio out", within: 10) { sim.speakers.allSatisfy { ($0.renderLogs.last?.log.statistics.renderedFrames ?? 0) > 4800 } }
            let gone = sim.speakers[1]
            await gone.powerOff()
            try await events.waitFor("speaker 1 lost") { if case .speakerLost(gone.deviceId, _) = $0 { true } else { false } }
            let before = sim.speakers[0].renderLogs.last!.log.statistics.renderedFrames
            try await waitUntil("the other plays on", within: 10) { sim.speakers[0].renderLogs.last!.log.statistics.renderedFrames > before + 9600 }
            #expect(await c.playerState == .playing)
            // The session's volume changes while speaker 1 is away (issue 19 defect 8): it gets it when it rejoins.
            try await c.setVolume(20, of: sim.speakers[0].deviceId)
            #expect(gone.settings.volume == 50)
            let logsBefore = gone.renderLogs.count
            gone.powerOn()
            try await waitUntil("speaker 1 rejoins", within: 15) {
                gone.renderLogs.count > logsBefore && (gone.renderLogs.last?.log.statistics.renderedFrames ?? 0) > 9600
            }
            #expect(gone.settings.volume == 20)
            let rejoined = gone.renderLogs.last!.log
            let logs = [sim.speakers[0].renderLogs.last!.log, rejoined]
            let from = rejoined.firstSource!.sourceFrame + 4800
            let last = rejoined.sourceIndex().last!
            let upper = last.sourceFrame + last.count
            try #require(upper > from + 480, "rejoined speaker played frames \(from)..<\(upper)")
            let spreads = PlaybackAnalysis.spreads(logs, frames: from..<upper, stride: 480)
            #expect(!spreads.isEmpty)
            #expect(PlaybackAnalysis.percentile(spreads, 99) <= Self.liveSpreadBound)
            await c.close()
            await sim.shutdown()
        }
    }

    /// A source that gives `frames` frames of a signal, then fails (as a cut transfer or damaged data does).
    final class FailingSource: PCMSource {
        struct Broken: Error, CustomStringConvertible { var description: String { "the bytes ran out" } }
        let signal: GeneratedSignal
        let frames: UInt64
        private let position = Mutex<UInt64>(0)
        var format: AudioFormat { signal.format }
        var totalFrames: UInt64? { nil }
        var isSeekable: Bool { false }

        init(_ signal: GeneratedSignal, failingAfter frames: UInt64) {
            self.signal = signal
            self.frames = frames
        }

        func read(maxFrames: Int) async throws -> [UInt8] {
            let (start, count) = position.withLock { p -> (UInt64, Int) in
                let n = Int(min(UInt64(maxFrames), frames - p))
                defer { p += UInt64(n) }
                return (p, n)
            }
            guard count > 0 else { throw Broken() }
            return signal.frames(start, count: count)
        }

        func seek(toFrame frame: UInt64) async throws { throw Broken() }
    }

    /// Issue 19: a source that fails is the source's failure, not a speaker's. Every frame it gave is played, the
    /// failure is reported with where the source stopped, and the playback then ends.
    @Test func aSourceThatFailsIsReportedWhereItStoppedAfterWhatItGaveIsPlayed() async throws {
        try await withTimeLimit {
            let (sim, c) = try await Self.start(1)
            let events = try await PlayerEventLog(c)
            let signal = GeneratedSignal(format: Self.format, seconds: 30, seed: 14)
            try await c.play(FailingSource(signal, failingAfter: 60_000), title: "breaks")
            try await events.waitFor("the end") { $0 == .stateChanged(.stopped) }
            let failures = events.all.compactMap { e -> (Double, FailureCategory, String)? in
                if case let .sourceFailed(seconds, category, message) = e { (seconds, category, message) } else { nil }
            }
            #expect(failures.count == 1, "\(events.all)")
            #expect(failures.first?.0 == 1.25 && failures.first?.1 == .device && failures.first?.2 == "the bytes ran out", "\(failures)")
            #expect(!events.all.contains { if case .speakerError = $0 { true } else { false } }, "\(events.all)")
            // The failure comes before the end, and the end comes once what the source gave was heard.
            let failed = events.all.firstIndex { if case .sourceFailed = $0 { true } else { false } }
            let ended = events.all.firstIndex(of: .ended)
            #expect(failed != nil && ended != nil && failed! < ended!, "\(events.all)")
            let (log, pcm) = try #require(sim.speakers[0].renderLogs.last)
            #expect(log.statistics.renderedFrames >= 59_000, "\(log.statistics)")
            let f = PlaybackAnalysis.fidelity(log, pcm: pcm, source: signal)
            #expect(f.isExact(given: log.statistics), "\(f) \(log.statistics)")
            await c.close()
            await sim.shutdown()
        }
    }

    @Test func recordingsAreWAVFilesWithRenderLogs() async throws {
        try await withTimeLimit {
            let dir = try TemporaryDirectory.make("tuneup-rec")
            let sim = try await SpeakerSimulation.start(count: 1, recordDirectory: dir, keepsRenderLogs: true)
            let c = try await SpeakerController.connect(endpoints(sim))
            try await c.setVolumeAll(50)
            try await c.addAllToSession()
            let events = try await PlayerEventLog(c)
            try await c.play(GeneratedSignal(format: Self.format, seconds: 0.5, seed: 13))
            try await events.waitFor("the end") { $0 == .ended }
            await c.close()
            await sim.shutdown()
            let stream = sim.speakers[0].renderLogs.last!.log.streamId
            let base = "\(dir)/speaker-0-stream-\(stream)"
            let wav = try [UInt8](Data(contentsOf: URL(fileURLWithPath: base + ".wav")))
            let (format, offset, bytes) = try WAV.parse(Array(wav.prefix(4096)), fileSize: UInt64(wav.count))
            #expect(format == Self.format)
            #expect(Array(wav[Int(offset)...]) == sim.speakers[0].renderLogs.last!.pcm)
            #expect(bytes == UInt64(sim.speakers[0].renderLogs.last!.pcm.count))
            let text = try String(contentsOfFile: base + ".render.log", encoding: .utf8)
            #expect(try RenderLog(text: text).runs == sim.speakers[0].renderLogs.last!.log.runs)
        }
    }
}
