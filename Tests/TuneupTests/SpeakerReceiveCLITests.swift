import Foundation
import Spawn
import Testing
import TestSupport

/// `tuneup speaker receive` without a sound card: the ALSA device is alsa-lib's `file` plugin over `null`, defined in
/// an asoundrc the test writes (ALSA_CONFIG_PATH), so what the receiver played lands in a raw file the test compares
/// with the source.
@Suite("tuneup speaker receive", .serialized)
struct SpeakerReceiveCLITests {
    /// 16-bit stereo noise (seeded), no sample zero: the first non-zero frame of the output is the source's first.
    static func noise(frames: Int, rate: UInt32 = 48_000) -> (wav: Data, pcm: [UInt8]) {
        var pcm: [UInt8] = []
        pcm.reserveCapacity(frames * 4)
        var random = TestRandom(seed: 0x1234_5678)
        for _ in 0..<frames * 2 {
            var s = Int16.random(in: -8192...8191, using: &random)
            if s == 0 { s = 1 }
            withUnsafeBytes(of: s.littleEndian) { pcm.append(contentsOf: $0) }
        }
        return (SpeakerPipeCLITests.wav(pcm, rate: rate), pcm)
    }

    /// A running `tuneup speaker receive` playing into DIR/out.raw.
    struct Receiver {
        let process: ChildProcess
        let address: String
        let output: String

        static func start(_ dir: String, extra: [String] = []) async throws -> Receiver {
            let output = dir + "/out.raw"
            let config = dir + "/asoundrc"
            try await offThePool {
                try "pcm.tuneuptest { type file slave.pcm { type null } file \"\(output)\" format raw }\n"
                    .write(toFile: config, atomically: true, encoding: .utf8)
            }
            let process = try ChildProcess(
                CLI.binary.path,
                ["speaker", "receive", "--alsa-device", "tuneuptest", "--listen", "tcp:127.0.0.1:0", "--audio-port", "0",
                 "--discovery-port", "0"] + extra,
                environment: ["ALSA_CONFIG_PATH": config, "XDG_STATE_HOME": dir, "TUNEUP_DEVICE": nil], stdin: .pipe)
            let lines = try await offThePool { process.output!.linesBlocking(1) }
            guard let address = lines.first else {
                process.terminate()
                throw CLIError("speaker receive printed no address; stderr: \(await process.errors!.text())")
            }
            return Receiver(process: process, address: address, output: output)
        }

        /// 'quit' on stdin; the exit status and stderr.
        func quit() async throws -> (Int32, String) {
            process.write("quit\n")
            let status = try await exitStatus(of: process)
            return (status, await process.errors!.text())
        }
    }

    @Test func aStreamFromTheControllerIsPlayedSampleExact() async throws {
        let dir = Scratch.directory
        let (wav, source) = Self.noise(frames: 48_000 * 3)
        try await offThePool { try wav.write(to: URL(fileURLWithPath: dir + "/noise.wav")) }
        let receiver = try await Receiver.start(dir)
        defer { if receiver.process.isRunning { receiver.process.terminate() } }
        // Volume 50 is unity gain: the samples pass unchanged.
        let volume = try await CLI.run(["speaker", "volume", "50", "--speaker", receiver.address])
        #expect(volume.status == 0, "\(volume.stderr)")
        let info = try await CLI.run(["speaker", "info", "--format", "json", "--speaker", receiver.address])
        #expect(info.stdout.contains("\"modelName\" : \"Tuneup Receiver\""), "\(info.stdout)")
        let play = try await CLI.run(["speaker", "play", dir + "/noise.wav", "--speaker", receiver.address], timeout: 60)
        #expect(play.status == 0, "\(play.stdout)\n\(play.stderr)")
        let (status, stderr) = try await receiver.quit()
        #expect(status == 0, "\(stderr)")
        // The file device keeps no time: nothing is corrected for the card, the output is the renderer's.
        #expect(stderr.contains("played 1 stream") && stderr.contains("card clock: 0 inserted, 0 dropped, 0 resyncs"), "\(stderr)")
        guard let counts = stderr.firstMatch(of: /stream clock: (\d+) repeated, (\d+) skipped, (\d+) lost/) else {
            Issue.record("no summary line: \(stderr)")
            return
        }
        let (repeated, skipped, lost) = (Int(counts.1)!, Int(counts.2)!, Int(counts.3)!)
        #expect(lost == 0)

        let path = receiver.output
        let out = try await offThePool { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }
        #expect(out.count % 4 == 0)
        guard let first = stride(from: 0, to: out.count, by: 4).first(where: { i in out[i..<i + 4].contains { $0 != 0 } }) else {
            Issue.record("the output (\(out.count) bytes) is silent")
            return
        }
        // Sample-exact apart from the start offset (the silence before the stream's first frame was due) and the
        // renderer's counted corrections (the stream's clock map against the receiver's clock): a frame played twice,
        // or one left out — and nothing else.
        let (seenRepeats, seenSkips, mismatch, end) = Self.compare(Array(out[first...]), source)
        #expect(mismatch == nil, "output frame \(mismatch ?? -1) is neither the source's nor a correction")
        #expect(seenRepeats == repeated && seenSkips == skipped, "found \(seenRepeats) repeats, \(seenSkips) skips; the receiver counted \(repeated), \(skipped)")
        #expect(out[(first + end * 4)...].allSatisfy { $0 == 0 }, "sound after the stream ended")
    }

    /// Walks `out` against `source` frame by frame (4 bytes): a frame equal to the one before it where the source
    /// goes on is a repeat, the source's next-but-one a skip. Returns the counts, the first output frame that is
    /// neither (nil: none), and the output frame after the source's last.
    static func compare(_ out: [UInt8], _ source: [UInt8]) -> (repeats: Int, skips: Int, mismatch: Int?, end: Int) {
        func frame(_ a: [UInt8], _ i: Int) -> ArraySlice<UInt8> { a[i * 4..<i * 4 + 4] }
        let n = source.count / 4, m = out.count / 4
        var i = 0, j = 0, repeats = 0, skips = 0
        while j < n {
            guard i < m else { return (repeats, skips, i, i) }
            if frame(out, i) == frame(source, j) {
                i += 1; j += 1
            } else if i > 0, frame(out, i) == frame(out, i - 1) {
                repeats += 1; i += 1
            } else if j + 1 < n, frame(out, i) == frame(source, j + 1) {
                skips += 1; j += 1
            } else {
                return (repeats, skips, i, i)
            }
        }
        return (repeats, skips, nil, i)
    }

    @Test func aDeviceThatDoesNotExistIsOneLineAndExit69() async throws {
        let r = try await CLI.run(["speaker", "receive", "--alsa-device", "no-such-device", "--listen", "tcp:127.0.0.1:0",
                                   "--audio-port", "0", "--discovery-port", "0"], timeout: 30)
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines == ["tuneup: ALSA device 'no-such-device' cannot be opened: No such file or directory"], "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func badOptionsAreRefusedWith64() async throws {
        for args in [["--latency-ms", "5000"], ["--listen", "udp:1"], ["--alsa-device", ""], ["--latency-ms", "nan"]] {
            let r = try await CLI.run(["speaker", "receive"] + args, timeout: 30)
            #expect(r.status == 64, "\(args): \(r.stderr)")
        }
    }
}
