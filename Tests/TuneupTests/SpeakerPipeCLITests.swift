import Foundation
import Speaker
import SpeakerPlayback
import Testing
import TestSupport
import Transport

/// `tuneup speaker play -`: standard input as the source — a WAV from a pipe, headerless PCM with `--raw` — played
/// to a simulated speaker whose recording equals the source sample for sample (its drift corrections aside); bad
/// `--raw` values and a pipe that cannot be played are one line and a documented exit code.
@Suite("tuneup speaker play - (standard input)", .serialized)
struct SpeakerPipeCLITests {
    /// Interleaved s16le stereo: a 440 Hz tone left, 660 Hz right, never 0 (so no sample looks like silence).
    static func pcm(frames: Int, rate: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(frames * 4)
        for i in 0..<frames {
            for (f, a) in [(440.0, 9000.0), (660.0, 7000.0)] {
                var s = Int16(a * sin(2 * Double.pi * f * Double(i) / Double(rate)))
                if s == 0 { s = 1 }
                withUnsafeBytes(of: s.littleEndian) { out.append(contentsOf: $0) }
            }
        }
        return out
    }

    /// `pcm` (s16le stereo) as a WAV file.
    static func wav(_ pcm: [UInt8], rate: UInt32) -> Data {
        Data(WAV.header(format: try! AudioFormat(sampleRate: rate, channels: 2, sampleFormat: .s16le), dataBytes: UInt32(pcm.count)) + pcm)
    }

    /// `cat FILE | tuneup ARGS` (a real pipe on standard input).
    static func piped(_ file: String, _ args: [String]) async throws -> CLI.Result {
        let quoted = ([CLI.binary.path] + args).map { "'\($0)'" }.joined(separator: " ")
        return try await offThePool {
            try CLI.runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "cat '\(file)' | \(quoted)"],
                               environment: ["XDG_STATE_HOME": Scratch.directory, "TUNEUP_DEVICE": nil], timeout: 60,
                               name: "cat \(file) | tuneup \(args.joined(separator: " "))")
        }
    }

    /// The recording of the one stream in `dir` against `source` (s16le stereo): frames compared, frames that differ,
    /// and source frames never played (drift corrections; the log says which).
    static func compare(recordings dir: String, source: [UInt8]) throws -> (compared: Int, mismatched: Int) {
        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        let log = try #require(names.first { $0.hasSuffix(".render.log") })
        let text = try String(contentsOfFile: dir + "/" + log, encoding: .utf8)
        let wav = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/" + log.replacingOccurrences(of: ".render.log", with: ".wav"))))
        var data = 12
        while data + 8 <= wav.count, wav[data..<data + 4] != ArraySlice(Array("data".utf8)) {
            let size = Int(wav[data + 4]) | Int(wav[data + 5]) << 8 | Int(wav[data + 6]) << 16 | Int(wav[data + 7]) << 24
            data += 8 + size
        }
        let pcm = Array(wav[(data + 8)...])
        var first: Int?
        var compared = 0, mismatched = 0
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let f = line.split(separator: " ")
            guard f.count == 6, let slot = Int(f[0]), let frame = Int(f[4]), let count = Int(f[5]) else { continue }
            if first == nil { first = slot }
            guard f[3] == "source" else { continue }
            for i in 0..<count {
                let out = (slot - first! + i) * 4, src = (frame + i) * 4
                guard out + 4 <= pcm.count, src + 4 <= source.count else { continue }
                compared += 1
                if pcm[out..<out + 4] != source[src..<src + 4] { mismatched += 1 }
            }
        }
        return (compared, mismatched)
    }

    @Test func rawPCMAndAWAVFromAPipePlayToTheEndSampleForSample() async throws {
        for (name, rate, raw) in [("raw", 48_000, true), ("wav", 44_100, false)] {
            let dir = Scratch.directory + "/rec-\(name)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let sim = try await RunningSpeakers.start(["--record", dir], count: 1)
            // Unity volume (50): the recording holds the samples unchanged.
            let volume = try await CLI.run(["speaker", "volume", "50"] + sim.speakerArgs)
            #expect(volume.status == 0, "\(volume.stderr)")
            let source = Self.pcm(frames: rate * 3 / 2, rate: rate)
            let file = Scratch.directory + "/source-\(name)"
            try (raw ? Data(source) : Self.wav(source, rate: UInt32(rate))).write(to: URL(fileURLWithPath: file))
            let r = try await Self.piped(file, ["speaker", "play", "-"] + (raw ? ["--raw", "s16le:\(rate):2"] : []) + sim.speakerArgs)
            // The end of standard input ends the play: exit 0, elapsed time only (no length is known).
            #expect(r.status == 0, "\(name): exit \(r.status): \(r.stderr)")
            #expect(r.stdout.contains("0:01") && r.stdout.contains("ended"), "\(name): \(r.stdout)")
            #expect(await sim.quit() == 0)
            let (compared, mismatched) = try Self.compare(recordings: dir, source: source)
            #expect(mismatched == 0, "\(name): \(mismatched) of \(compared) frames differ from the source")
            #expect(compared >= rate * 3 / 2 - 200, "\(name): only \(compared) of \(rate * 3 / 2) frames played")
        }
    }

    @Test func badRawValuesAndPipesThatCannotBePlayedAreOneLine() async throws {
        let cases: [([String], Int32, String)] = [
            (["-", "--raw", "s16le:48000"], 64, "FORMAT:RATE:CHANNELS"),
            (["-", "--raw", "u8:48000:2"], 64, "s16le, s24le, s32le, f32le"),
            (["-", "--raw", "s16le:1000:2"], 64, "8000...192000"),
            (["-", "--raw", "s16le:48000:0"], 64, "1...8"),
            (["song.wav", "--raw", "s16le:48000:2"], 64, "give - as the source"),
            (["-", "--from", "3"], 64, "cannot seek"),
        ]
        for (args, code, text) in cases {
            let r = try await CLI.run(["speaker", "play"] + args, stdin: "")
            #expect(r.status == code && r.stderrLines.count == 1 && r.stderr.contains(text), "\(args): exit \(r.status): \(r.stderr)")
        }
        // What standard input holds is refused before any speaker is looked for: nothing (65), text (65).
        let empty = try await CLI.run(["speaker", "play", "-"], stdin: "")
        #expect(empty.status == 65 && empty.stderrLines.count == 1 && empty.stderr.contains("standard input: is empty"), "exit \(empty.status): \(empty.stderr)")
        let words = try await CLI.run(["speaker", "play", "-"], stdin: "just some words, no audio at all\n")
        #expect(words.status == 65 && words.stderrLines.count == 1 && words.stderr.contains("standard input"), "exit \(words.status): \(words.stderr)")
    }
}
