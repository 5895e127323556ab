import Foundation
import SpeakerPlayback
import SpeakerSession
import SpeakerSimulator
import TestSupport
import Testing
import Transport

/// FLAC on the wire (docs/speaker-protocol.md §7.2) on virtual time: every datagram one FLAC frame, decoded alone,
/// so loss, resends, reordering and a speaker joining mid-stream work as with PCM, and the output is the source's.
/// The source is the tests' white noise (incompressible: FLAC's worst case, every frame near its bound).
@Suite("FLAC playback on virtual time")
struct FLACVirtualPlaybackTests {
    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)

    @Test func lostPacketsAreRecoveredAndTheOutputEqualsTheSource() async throws {
        let audio = LinkJitter(maximum: 20_000_000, probability: 1, loss: 0.02)
        let control = LinkJitter(maximum: 20_000_000, probability: 0.3, floor: 50_000)
        var config = VirtualPlayback.Configuration(speakers: [-300.0, 250].map {
            VirtualPlayback.Speaker(clock: DACClock(offset: 1_000_000_000, driftPPM: $0), audio: audio, control: control)
        } + [VirtualPlayback.Speaker(clock: DACClock(offset: 7_000_000_000, driftPPM: 120), audio: audio, control: control, joinsAfter: 2)])
        config.format = Self.format
        config.seconds = 6
        config.seed = 21
        config.player.encoding = .flac
        let (r, fidelity) = try await computed(config) { config in
            let source = GeneratedSignal(format: Self.format, seconds: 6, seed: 8)
            let r = VirtualPlayback(config, source: source).run()
            return (r, r.speakers.map { PlaybackAnalysis.fidelity($0.log, pcm: $0.pcm, source: source) })
        }
        // 353 frames a packet (FLAC's verbatim bound), not PCM's 358: 6 s are 816 packets and the end.
        #expect(r.packetsSent == (288_000 + 352) / 353)
        #expect(r.bytesSent <= r.packetsSent * AudioPacket.maxDatagramSize)
        for (k, s) in r.speakers.enumerated() {
            let stats = s.log.statistics
            let report = "speaker \(k): \(stats), recovery \(s.recovery), \(s.resentPackets) resent, \(fidelity[k])"
            expectEveryLossRecovered(s, fidelity[k], atLeast: 5, report)
            #expect(fidelity[k].comparedFrames > 100_000, "\(report)")
        }
        // Those from the start heard all of it, from frame 0 (a lost first packet is asked for like any other, §7.1);
        // the one added after 2 s joined mid-stream on the frames still ahead.
        for k in 0..<2 {
            let stats = r.speakers[k].log.statistics
            #expect(r.speakers[k].log.firstSource?.sourceFrame == 0, "speaker \(k)")
            #expect(stats.renderedFrames + stats.skippedSamples == 288_000, "speaker \(k): \(stats)")
        }
        #expect((r.speakers[2].log.firstSource?.sourceFrame ?? 0) > 48_000)
    }
}

/// FLAC negotiated over real sockets: a version-3 speaker gets FLAC datagrams; a version-2 speaker in the session
/// makes `play` refuse with one line (no fallback), and one added to a FLAC stream is reported and left out.
@Suite("FLAC playback to simulated speakers on loopback", .serialized)
struct FLACLivePlaybackTests {
    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)

    static func start(versions: [ClosedRange<UInt8>], encoding: AudioEncoding) async throws -> (SpeakerSimulation, SpeakerController) {
        let sim = try await SpeakerSimulation.start(count: versions.count, keepsRenderLogs: true, versions: { versions[$0] })
        let c = try await SpeakerController.connect(endpoints(sim))
        try await c.setPlayerOptions(PlayerOptions(encoding: encoding))
        try await c.setVolumeAll(50)
        try await c.addAllToSession()
        return (sim, c)
    }

    @Test func aVersion3SpeakerGetsFLACAndPlaysTheSource() async throws {
        try await withTimeLimit {
            let (sim, c) = try await Self.start(versions: [1...3], encoding: .flac)
            let source = GeneratedSignal(format: Self.format, seconds: 1.5, seed: 4)
            let events = try await PlayerEventLog(c)
            try await c.play(source, title: "flac")
            try await events.waitFor("the end") { $0 == .ended }
            let speaker = sim.speakers[0]
            // 72000 frames in packets of 353: 204 FLAC datagrams (the end sent three times; retransmissions count too).
            #expect(speaker.flacDatagrams >= 204, "\(speaker.flacDatagrams) FLAC datagrams")
            #expect(speaker.undecodableDatagrams.count == 0, "\(speaker.undecodableDatagrams)")
            let (log, pcm) = try #require(speaker.renderLogs.last)
            let f = PlaybackAnalysis.fidelity(log, pcm: pcm, source: source)
            #expect(f.comparedFrames > 60_000 && f.mismatchedFrames == 0 && f.isExact(given: log.statistics), "\(f) \(log.statistics)")
            await c.close()
            await sim.shutdown()
        }
    }

    /// A version-2 speaker added while a FLAC stream plays is reported and left out; the version-3 one plays on.
    @Test func aVersion2SpeakerAddedToAFLACStreamIsReportedAndLeftOut() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 2, keepsRenderLogs: true, versions: { [1...3, 1...2][$0] })
            let c = try await SpeakerController.connect(endpoints(sim))
            try await c.setPlayerOptions(PlayerOptions(encoding: .flac))
            try await c.setVolumeAll(50)
            let (newer, older) = (try await c.info(index: 0).deviceId, try await c.info(index: 1).deviceId)
            try await c.addToSession(newer)
            let events = try await PlayerEventLog(c)
            let source = GeneratedSignal(format: Self.format, seconds: 1.5, seed: 4)
            try await c.play(source, title: "flac")
            try await c.addToSession(older)
            try await events.waitFor("the older speaker reported") {
                if case let .speakerError(id, code, message) = $0 { id == older && code == .unsupportedFormat && message.contains("version 2") } else { false }
            }
            try await events.waitFor("the end") { $0 == .ended }
            #expect(sim.speakers[0].flacDatagrams >= 204 && sim.speakers[1].flacDatagrams == 0)
            #expect(!events.all.contains(.speakerJoined(deviceId: older)))
            await c.close()
            await sim.shutdown()
        }
    }

    @Test func aVersion2SpeakerMakesFLACRefusedWithOneLine() async throws {
        try await withTimeLimit {
            let (sim, c) = try await Self.start(versions: [1...3, 1...2], encoding: .flac)
            let source = GeneratedSignal(format: Self.format, seconds: 1, seed: 4)
            do {
                try await c.play(source, title: "flac")
                Issue.record("play with FLAC to a version-2 speaker was not refused")
            } catch let error as SpeakerSessionError {
                #expect(error.code == .versionMismatch)
                #expect(error.message.contains("speaks protocol version 2") && error.message.contains("--encoding pcm"), "\(error.message)")
                #expect(!error.message.contains("\n"))
            }
            #expect(sim.speakers.allSatisfy { $0.flacDatagrams == 0 })
            await c.close()
            // PCM (the default) still plays to both, the version-2 speaker on version 2.
            let pcmController = try await SpeakerController.connect(endpoints(sim))
            try await pcmController.addAllToSession()
            let events = try await PlayerEventLog(pcmController)
            try await pcmController.play(source, title: "pcm")
            try await events.waitFor("the end") { $0 == .ended }
            // The player ends at the first speaker's end: the other may still be rendering its last frames.
            try await waitUntil("every speaker rendered its end") { sim.speakers.allSatisfy { $0.streamFormat == nil } }
            for speaker in sim.speakers {
                let (log, pcm) = try #require(speaker.renderLogs.last)
                let f = PlaybackAnalysis.fidelity(log, pcm: pcm, source: source)
                #expect(f.comparedFrames > 40_000 && f.mismatchedFrames == 0, "\(f)")
                #expect(speaker.flacDatagrams == 0)
            }
            await pcmController.close()
            await sim.shutdown()
        }
    }
}
