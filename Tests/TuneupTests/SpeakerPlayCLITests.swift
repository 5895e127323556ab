import Foundation
import Testing

/// `tuneup speaker play` on simulated speakers: a playback started by one command is paused, resumed, its volume
/// changed and stopped by others, and the playing command follows; sources that cannot be played are refused with
/// one line before any speaker plays.
@Suite("tuneup speaker play", .serialized)
struct SpeakerPlayCLITests {
    /// A 16-bit stereo WAV file of a 440 Hz tone.
    static func wav(seconds: Double, rate: UInt32 = 48_000) -> Data {
        let frames = Int(seconds * Double(rate))
        var d = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        d.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + frames * 4)); d.append(contentsOf: Array("WAVEfmt ".utf8))
        u32(16); u16(1); u16(2); u32(rate); u32(rate * 4); u16(4); u16(16)
        d.append(contentsOf: Array("data".utf8)); u32(UInt32(frames * 4))
        for i in 0..<frames {
            let s = Int16(8000 * sin(2 * Double.pi * 440 * Double(i) / Double(rate)))
            u16(UInt16(bitPattern: s)); u16(UInt16(bitPattern: s))
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
        #expect(await sim.quit() == 0)
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
}
