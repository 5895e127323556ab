import Foundation
import SpeakerPlayback
import SpeakerSession
import SpeakerSimulator
import Testing
import TestSupport

/// `tuneup speaker play --encoding flac` to a `tuneup sim speaker`: FLAC on the wire (docs/speaker-protocol.md §7.2),
/// and the speaker's recording is the source sample for sample. (Its suite name ends like SpeakerPlayCLITests':
/// tools/test.sh runs it with the real-time tests.)
@Suite("tuneup speaker play --encoding flac", .serialized)
struct FLACSpeakerPlayCLITests {
    @Test func playWithFLACReachesASimulatedSpeakerLosslessly() async throws {
        let dir = Scratch.directory
        let sim = try await RunningSpeakers.start(["--record", dir], count: 1)
        // The tests' signal (every sample differs: a misplaced or misdecoded one shows) as a WAV file.
        let format = try AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)
        let signal = GeneratedSignal(format: format, seconds: 2, seed: 17)
        let frames = signal.frames(0, count: 96_000)
        let file = Data(WAV.header(format: format, dataBytes: UInt32(frames.count)) + frames)
        try await offThePool { try file.write(to: URL(fileURLWithPath: dir + "/song.wav")) }
        // Volume 50: the samples unscaled.
        let volume = try await CLI.run(["speaker", "volume", "50"] + sim.speakerArgs)
        #expect(volume.status == 0, "\(volume.stderr)")
        let r = try await CLI.run(["speaker", "play", dir + "/song.wav", "--encoding", "flac", "--format", "json"] + sim.speakerArgs)
        let (times, _, events) = SpeakerPlayCLITests.outcome(r)
        #expect(r.status == 0, "exit \(r.status): \(r.stderr)\n\(r.stdout)")
        #expect(events.contains("ended") && !events.contains("speaker-error"), "\(r.stdout)")
        #expect(times.max() == 2, "\(r.stdout)")
        #expect(await sim.stop() == 0)

        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        let wav = try #require(names.first { $0.hasPrefix("speaker-0-stream-") && $0.hasSuffix(".wav") })
        let (recording, logText) = try await offThePool { () throws -> ([UInt8], String) in
            ([UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/" + wav))),
             try String(contentsOfFile: dir + "/" + wav.dropLast(4) + ".render.log", encoding: .utf8))
        }
        let log = try RenderLog(text: logText)
        let f = PlaybackAnalysis.fidelity(log, pcm: Array(recording.dropFirst(WAV.headerSize)), source: signal)
        #expect(f.comparedFrames > 90_000, "\(f)")
        // Every frame played is the source frame the render log says it is (a misdecoded FLAC frame would differ);
        // frames left out are the renderer's few drift corrections (the log file does not carry their counts).
        #expect(f.mismatchedFrames == 0 && f.missingFrames < 100, "\(f)")

        let refused = try await CLI.run(["speaker", "play", dir + "/song.wav", "--encoding", "opus"] + sim.speakerArgs)
        #expect(refused.status == 64, "\(refused.stderr)")
    }
}
