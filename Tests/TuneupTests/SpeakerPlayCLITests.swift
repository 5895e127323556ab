import Foundation
import Speaker
import SpeakerPlayback
import Testing
import TestSupport
import Transport

/// `tuneup speaker play` on simulated speakers: a playback started by one command is paused, resumed, its volume
/// changed and stopped by others, and the playing command follows; sources that cannot be played are refused with
/// one line before any speaker plays.
@Suite("tuneup speaker play", .serialized)
struct SpeakerPlayCLITests {
    /// A 16-bit stereo WAV file of a 440 Hz tone.
    static func wav(seconds: Double, rate: UInt32 = 48_000) -> Data {
        let frames = Int(seconds * Double(rate))
        let format = try! AudioFormat(sampleRate: rate, channels: 2, sampleFormat: .s16le)
        var d = Data(WAV.header(format: format, dataBytes: UInt32(frames * 4)))
        for i in 0..<frames {
            let s = Int16(8000 * sin(2 * Double.pi * 440 * Double(i) / Double(rate)))
            withUnsafeBytes(of: s.littleEndian) { d.append(contentsOf: $0); d.append(contentsOf: $0) }
        }
        return d
    }

    static func states(_ out: Collector) -> [String] {
        SpeakerEventsTests.events(out).filter { $0["event"] as? String == "state" }.compactMap { $0["state"] as? String }
    }

    /// Waits until the playing command has printed `count` state events, the last one `state`.
    static func waitForState(_ out: Collector, _ state: String, count: Int) async throws {
        let reached = try await offThePool { () -> Bool in
            let deadline = Date().addingTimeInterval(30)
            repeat {
                let s = states(out)
                if s.count >= count, s.last == state { return true }
                usleep(10_000)
            } while Date() < deadline
            return false
        }
        #expect(reached, "no '\(state)' as state event \(count): \(out.linesBlocking(0, timeout: 0))")
    }

    @Test func playbackIsControlledFromOtherCommands() async throws {
        let sim = try await RunningSpeakers.start([], count: 2)
        let dir = Scratch.directory
        try Self.wav(seconds: 30).write(to: URL(fileURLWithPath: dir + "/song.wav"))
        let p = try ExampleTests.start(["speaker", "play", dir + "/song.wav", "--format", "json"] + sim.speakerArgs,
                                       state: Scratch.directory, directory: nil)
        defer { if p.process.isRunning { p.process.terminate() } }
        let time = try await SpeakerEventsTests.waitFor(p.out, "time") { $0["event"] as? String == "time" && ($0["seconds"] as? Int ?? 0) >= 1 }
        #expect(time["seconds"] as? Int == 1, "\(time)")
        #expect(Self.states(p.out) == ["playing"])

        let pause = try await CLI.run(["speaker", "pause", "--format", "json"] + sim.speakerArgs)
        #expect(pause.status == 0, "\(pause.stderr)")
        try await Self.waitForState(p.out, "paused", count: 2)
        let status = try await CLI.run(["speaker", "status", "--format", "json"] + sim.speakerArgs)
        #expect(status.status == 0 && status.stdout.components(separatedBy: "\"state\" : \"paused\"").count == 3, "\(status.stdout)")

        let pausedAt = SpeakerEventsTests.events(p.out).compactMap { $0["seconds"] as? Int }.max() ?? 0
        let resume = try await CLI.run(["speaker", "resume"] + sim.speakerArgs)
        #expect(resume.status == 0, "\(resume.stderr)")
        try await Self.waitForState(p.out, "playing", count: 3)
        // The playing command streams again: four more seconds play (more than a speaker waits for audio before it
        // gives up on a stream), and the speakers still play.
        _ = try await SpeakerEventsTests.waitFor(p.out, "time after resume") { $0["event"] as? String == "time" && ($0["seconds"] as? Int ?? 0) >= pausedAt + 4 }
        let playing = try await CLI.run(["speaker", "status", "--format", "json"] + sim.speakerArgs)
        #expect(playing.stdout.components(separatedBy: "\"state\" : \"playing\"").count == 3, "\(playing.stdout)\n\(p.out.linesBlocking(0, timeout: 0))")
        let volume = try await CLI.run(["speaker", "volume", "12", "--format", "json"] + sim.speakerArgs)
        let average = try json(volume.stdout)["averageVolume"] as? Double
        #expect(volume.status == 0 && average == 12, "\(volume.stdout) \(volume.stderr)")

        let stop = try await CLI.run(["speaker", "stop"] + sim.speakerArgs)
        #expect(stop.status == 0, "\(stop.stderr)\n\(p.out.linesBlocking(0, timeout: 0))")
        let exit = try await exitStatus(of: p.process)
        #expect(exit == 0, "\(p.err.textBlocking())")
        #expect(Self.states(p.out) == ["playing", "paused", "playing", "stopped"], "\(p.out.linesBlocking(0, timeout: 0))")

        // Ctrl-C (issue 19 defect 8): the speakers are stopped, not left to report `playback-interrupted` when the
        // links close, and the command says the state it leaves (exit 130).
        let watch = try ExampleTests.start(["speaker", "events", "--format", "json"] + sim.speakerArgs, state: Scratch.directory, directory: nil)
        defer { if watch.process.isRunning { watch.process.terminate() } }
        let following = try await offThePool { () -> Bool in
            let deadline = Date().addingTimeInterval(30)
            while !watch.err.linesBlocking(0, timeout: 0).contains(where: { $0.contains("following 2 speakers") }), Date() < deadline { usleep(10_000) }
            return Date() < deadline
        }
        try #require(following, "\(watch.err.linesBlocking(0, timeout: 0))")
        let again = try ExampleTests.start(["speaker", "play", dir + "/song.wav", "--format", "json"] + sim.speakerArgs,
                                           state: Scratch.directory, directory: nil)
        defer { if again.process.isRunning { again.process.terminate() } }
        _ = try await SpeakerEventsTests.waitFor(again.out, "time") { $0["event"] as? String == "time" }
        again.process.interrupt()
        #expect(try await exitStatus(of: again.process) == 130, "\(again.err.textBlocking())")
        #expect(Self.states(again.out) == ["playing", "stopped"], "\(again.out.linesBlocking(0, timeout: 0))")
        // The watcher hears the state from the speakers over its own links: waited for, not read once.
        let announced = try await SpeakerEventsTests.waitFor(watch.out, "playback-state") { $0["event"] as? String == "playback-state" }
        let stream = try #require(announced["streamId"] as? Int)
        let stoppedBoth = try await offThePool { () -> Bool in
            let deadline = Date().addingTimeInterval(30)
            repeat {
                let stops = SpeakerEventsTests.events(watch.out).filter { $0["streamId"] as? Int == stream && $0["state"] as? String == "stopped" }
                if stops.count >= 2 { return true }
                usleep(10_000)
            } while Date() < deadline
            return false
        }
        #expect(stoppedBoth, "\(watch.out.linesBlocking(0, timeout: 0))")
        #expect(!SpeakerEventsTests.events(watch.out).contains { $0["event"] as? String == "error" }, "\(watch.out.linesBlocking(0, timeout: 0))")
        #expect(await sim.quit() == 0)
    }

    /// Issue 30 item 9: another controller's stream on the speaker (a second `play`, as the hub's) stops the first
    /// `play` at once, without `ended`, with one line and exit 69 (it went on for the whole song and exited 0).
    @Test func aPlayWhoseStreamIsTakenOverStopsAtOnceWithExit69() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let dir = Scratch.directory
        try Self.wav(seconds: 60).write(to: URL(fileURLWithPath: dir + "/long.wav"))
        try Self.wav(seconds: 1).write(to: URL(fileURLWithPath: dir + "/short.wav"))
        let p = try ExampleTests.start(["speaker", "play", dir + "/long.wav", "--format", "json"] + sim.speakerArgs,
                                       state: Scratch.directory, directory: nil)
        defer { if p.process.isRunning { p.process.terminate() } }
        _ = try await SpeakerEventsTests.waitFor(p.out, "time") { $0["event"] as? String == "time" }
        let other = try await CLI.run(["speaker", "play", dir + "/short.wav"] + sim.speakerArgs, timeout: 60)
        #expect(other.status == 0, "\(other.stderr)")
        #expect(try await exitStatus(of: p.process) == 69, "\(p.err.textBlocking())")
        #expect(p.err.textBlocking().contains("another controller took the speakers over"), "\(p.err.textBlocking())")
        #expect(!SpeakerEventsTests.events(p.out).contains { $0["event"] as? String == "ended" }, "\(p.out.linesBlocking(0, timeout: 0))")
        #expect(Self.states(p.out).last == "stopped", "\(p.out.linesBlocking(0, timeout: 0))")
        #expect(await sim.quit() == 0)
    }

    /// Issue 30 item 9: its only speaker dies (the simulator is killed: no word from it), `play` waits for it 3 s,
    /// then stops without `ended`, with one line and exit 69 (it printed `ended` and exited 0 at the end of the song).
    @Test func aPlayThatLostEverySpeakerStopsWithExit69() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let dir = Scratch.directory
        try Self.wav(seconds: 60).write(to: URL(fileURLWithPath: dir + "/long.wav"))
        let p = try ExampleTests.start(["speaker", "play", dir + "/long.wav", "--format", "json"] + sim.speakerArgs,
                                       state: Scratch.directory, directory: nil)
        defer { if p.process.isRunning { p.process.terminate() } }
        _ = try await SpeakerEventsTests.waitFor(p.out, "time") { $0["event"] as? String == "time" }
        sim.process.signal(SIGKILL)
        _ = try await exitStatus(of: sim.process)
        #expect(try await exitStatus(of: p.process) == 69, "\(p.err.textBlocking())")
        #expect(p.err.textBlocking().contains("every speaker was lost"), "\(p.err.textBlocking())")
        let events = SpeakerEventsTests.events(p.out)
        #expect(events.contains { $0["event"] as? String == "speaker-lost" }, "\(p.out.linesBlocking(0, timeout: 0))")
        #expect(!events.contains { $0["event"] as? String == "ended" }, "\(p.out.linesBlocking(0, timeout: 0))")
    }

    @Test func sourcesThatCannotBePlayedAreRefusedBeforeAnySpeakerPlays() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let dir = Scratch.directory
        try Data("just some words, no audio at all\n".utf8).write(to: URL(fileURLWithPath: dir + "/notes.wav"))
        try Self.wav(seconds: 1).prefix(30).write(to: URL(fileURLWithPath: dir + "/cut.wav"))
        let cases: [(String, Int32, String)] = [
            (dir + "/missing.wav", 74, "no such file"), (dir + "/notes.wav", 65, "not audio"), (dir + "/cut.wav", 65, "cut short"),
            ("http://127.0.0.1:9/stream.mp3", 69, "127.0.0.1:9"), ("ftp://host/a.mp3", 64, "ftp"),
        ]
        for (source, code, text) in cases {
            let r = try await CLI.run(["speaker", "play", source] + sim.speakerArgs)
            #expect(r.status == code && r.stderrLines.count == 1 && r.stderr.contains(text), "\(source): exit \(r.status): \(r.stderr)")
        }
        let status = try await CLI.run(["speaker", "status", "--format", "json"] + sim.speakerArgs)
        #expect(status.stdout.contains("\"renderedFrames\" : 0"), "nothing played: \(status.stdout)")
        #expect(await sim.quit() == 0)
    }

    /// The play's JSON Lines, the last `time` event's seconds and the `source-error` event.
    static func outcome(_ r: CLI.Result) -> (times: [Int], sourceError: [String: Any]?, events: [String]) {
        let lines = r.stdout.split(separator: "\n").compactMap { try? json(String($0)) }
        return (lines.filter { $0["event"] as? String == "time" }.compactMap { $0["seconds"] as? Int },
                lines.first { $0["event"] as? String == "source-error" }, lines.compactMap { $0["event"] as? String })
    }

    /// Issue 19: a source that fails while it plays is the source's failure, not speaker 0's: what it gave plays,
    /// then one line says where the source stopped, and the play exits with the failure's code. Here a FLAC file
    /// cut in the middle: bad data, 65.
    @Test func aFileCutInTheMiddlePlaysWhatItHoldsThenFailsWithItsExitCode() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let path = Scratch.directory + "/cut.flac"
        let flac = FLACWriter.verbatim(seconds: 4)
        try Data(flac.prefix(flac.count / 2)).write(to: URL(fileURLWithPath: path))
        let r = try await CLI.run(["speaker", "play", path, "--format", "json"] + sim.speakerArgs)
        let (times, sourceError, events) = Self.outcome(r)
        #expect(r.status == 65, "exit \(r.status): \(r.stderr)\n\(r.stdout)")
        #expect(r.stderrLines.count == 1 && r.stderr.hasPrefix("tuneup: the source failed at 1.") && r.stderr.contains(path), "\(r.stderr)")
        #expect((sourceError?["at"] as? Double).map { (1.5...2.0).contains($0) } == true, "\(r.stdout)")
        #expect(!events.contains("speaker-error") && !events.contains("ended"), "\(r.stdout)")
        #expect(times.max() == 1, "the two seconds the file holds played: \(r.stdout)")
        #expect(await sim.quit() == 0)
    }

    /// Issue 19 defect 8: an MP3 damaged near its start fails with one line, without libmpg123's notes on stderr
    /// ("Note: Illegal Audio-MPEG-Header ...", "[src/libmpg123/...] error: ...").
    @Test func aDamagedMP3FailsWithOneLineAndNoDecoderNotes() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let path = Scratch.directory + "/damaged.mp3"
        let tone = (0..<(2 * 44_100)).flatMap { i -> [Int16] in let v = Int16(8000 * sin(Double(i) / 20)); return [v, v] }
        try SoundFiles.write(path, format: SoundFiles.mp3, rate: 44_100, channels: 2, samples: tone)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // Noise over 4000 bytes a tenth in (seed 1: libmpg123 reports an error; with some seeds it decodes on).
        var random = TestRandom(seed: 1)
        for i in (bytes.count / 10)..<(bytes.count / 10 + 4000) {
            bytes[i] = UInt8.random(in: 0...255, using: &random)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let r = try await CLI.run(["speaker", "play", path] + sim.speakerArgs)
        #expect(r.status == 65 && r.stderrLines.count == 1 && r.stderr.contains("damaged.mp3"), "exit \(r.status): \(r.stderr)")
        #expect(await sim.quit() == 0)
    }

    /// Issue 19: an HTTP transfer cut after half of a 6 s WAV plays the 3 s that arrived (before, 0.09 s), then fails
    /// with the server's exit code (69) saying where the source stopped.
    @Test func aCutStreamPlaysWhatArrivedThenFails() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let wav = [UInt8](Self.wav(seconds: 6))
        let cut = 44 + (wav.count - 44) / 2
        let server = try await TestHTTPServer(["/song.wav": .cut(prefix: Array(wav.prefix(cut)), type: "audio/wav", announced: wav.count)])
        let url = "http://127.0.0.1:\(server.port)/song.wav"
        let r = try await CLI.run(["speaker", "play", url, "--format", "json"] + sim.speakerArgs)
        let (times, sourceError, events) = Self.outcome(r)
        #expect(r.status == 69, "exit \(r.status): \(r.stderr)\n\(r.stdout)")
        #expect(r.stderrLines.count == 1 && r.stderr.hasPrefix("tuneup: the source failed at 3.0 s: \(url): "), "\(r.stderr)")
        #expect(sourceError?["at"] as? Double == 3.0, "\(r.stdout)")
        #expect(!events.contains("speaker-error") && !events.contains("ended"), "\(r.stdout)")
        #expect(times.max() ?? 0 >= 2, "the three seconds that arrived played: \(r.stdout)")
        await server.stop()
        #expect(await sim.quit() == 0)
    }

    /// Issue 19: a server that stops sending is noticed by the play (after 2 s) before the speakers give up on the
    /// stream (after 3 s with no audio), and named.
    @Test func aStalledStreamIsNamedBeforeTheSpeakersGiveUp() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let wav = [UInt8](Self.wav(seconds: 30))
        let sent = 44 + 2 * 48_000 * 4
        let server = try await TestHTTPServer(["/live.wav": .stall(prefix: Array(wav.prefix(sent)), type: "audio/wav")])
        let url = "http://127.0.0.1:\(server.port)/live.wav"
        let r = try await CLI.run(["speaker", "play", url] + sim.speakerArgs)
        #expect(r.status == 69, "exit \(r.status): \(r.stderr)\n\(r.stdout)")
        #expect(r.stderrLines == ["tuneup: the source failed at 2.0 s: \(url) sent nothing for 2.0 s"], "\(r.stderr)")
        #expect(!r.stdout.contains("no audio for stream") && !r.stdout.contains("speaker-error"), "\(r.stdout)")
        let status = try await CLI.run(["speaker", "status", "--format", "json"] + sim.speakerArgs)
        #expect(status.stdout.contains("\"state\" : \"stopped\""), "the speaker was stopped: \(status.stdout)")
        await server.stop()
        #expect(await sim.quit() == 0)
    }

    @Test func negativeNumbersGetTheirRangeError() async throws {
        let from = try await CLI.run(["speaker", "play", "song.wav", "--from", "-1", "--speaker", "127.0.0.1:9"])
        #expect(from.status == 64 && from.stderrLines.count == 1 && from.stderr.hasPrefix("tuneup: --from must be 0 or more seconds, got -1"),
                "\(from.stderr)")
        let volume = try await CLI.run(["speaker", "volume", "-1", "--speaker", "127.0.0.1:9"])
        #expect(volume.status == 64 && volume.stderrLines.count == 1 && volume.stderr.hasPrefix("tuneup: volume -1 is outside 0...50"),
                "\(volume.stderr)")
        let words = try await CLI.run(["speaker", "volume", "loud", "--speaker", "127.0.0.1:9"])
        #expect(words.status == 64 && words.stderr.hasPrefix("tuneup: the volume is a whole number 0...50, got 'loud'"), "\(words.stderr)")
        let option = try await CLI.run(["speaker", "volume", "--bogus", "--speaker", "127.0.0.1:9"])
        #expect(option.status == 64 && option.stderr.hasPrefix("tuneup: Unknown option '--bogus'"), "\(option.stderr)")
    }
}

/// FLAC files without an encoder: 16-bit stereo 48 kHz, every subframe VERBATIM (the format's uncompressed form), a
/// 440 Hz tone; what libFLAC decodes like any other FLAC file.
enum FLACWriter {
    static func verbatim(seconds: Double) -> [UInt8] {
        let rate = 48_000, block = 4096
        let total = Int(seconds * Double(rate))
        var out = Array("fLaC".utf8)
        out += [0x80, 0, 0, 34]   // the last metadata block: STREAMINFO, 34 bytes
        out += [UInt8(block >> 8), UInt8(block & 0xFF), UInt8(block >> 8), UInt8(block & 0xFF), 0, 0, 0, 0, 0, 0]
        // 20 bits rate, 3 bits channels - 1, 5 bits bits per sample - 1, 36 bits total samples.
        let packed = UInt64(rate) << 44 | UInt64(1) << 41 | UInt64(15) << 36 | UInt64(total)
        out += (0..<8).map { UInt8(truncatingIfNeeded: packed >> (56 - 8 * UInt64($0))) }
        out += [UInt8](repeating: 0, count: 16)   // no MD5
        var first = 0, number = 0
        while first < total {
            let count = min(block, total - first)
            // Sync, fixed block size; block size 4096 (or 16 bits at the end), 48 kHz; two independent channels,
            // 16 bits; the frame number (below 128: one byte).
            var frame: [UInt8] = [0xFF, 0xF8, UInt8(count == block ? 0xC : 0x7) << 4 | 0xA, 0x18, UInt8(number)]
            if count != block { frame += [UInt8((count - 1) >> 8), UInt8((count - 1) & 0xFF)] }
            frame.append(crc8(frame))
            for _ in 0..<2 {
                frame.append(0x02)   // VERBATIM, no wasted bits
                for i in first..<(first + count) {
                    let v = UInt16(bitPattern: Int16(8000 * sin(2 * Double.pi * 440 * Double(i) / Double(rate))))
                    frame += [UInt8(v >> 8), UInt8(v & 0xFF)]
                }
            }
            let crc = crc16(frame)
            frame += [UInt8(crc >> 8), UInt8(crc & 0xFF)]
            out += frame
            first += count
            number += 1
        }
        return out
    }

    static func crc8(_ bytes: [UInt8]) -> UInt8 {
        var crc: UInt8 = 0
        for b in bytes {
            crc ^= b
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        }
        return crc
    }

    static func crc16(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0
        for b in bytes {
            crc ^= UInt16(b) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x8005 : crc << 1 }
        }
        return crc
    }
}
