import ArgumentParser
import Foundation
import Glibc
import SpeakerPlayback
import SpeakerSession
import SpeakerSimulator
import Support
import Transport

/// `tuneup-bench speaker-sync`: synchronised playback to many simulated speakers.
struct SpeakerSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speaker-sync",
        abstract: "Play to 8 simulated speakers with drifting clocks and jittery links: sync, fidelity, latency, join, CPU.",
        discussion: """
            Part 1, virtual time (VirtualPlayback: the player's schedule and clock tracking, the codec, each speaker's \
            renderer on its DAC clock; no sockets): SPEAKERS speakers with seeded drift within ±MAX-DRIFT ppm and \
            offsets up to 10 s, audio datagrams each delayed 0...JITTER ms, clock sync over a control path where 30 % \
            of the frames wait up to JITTER ms (the others up to 50 µs); one more speaker is added at JOIN s. \
            Goals: spread between any two speakers' output of the same frame p99 <= 100 µs; first sample out of every \
            speaker <= 300 ms after play (200 ms buffer); the added speaker's first sample <= 1 s after it was added, \
            and in sync from 1 s after it was added (spread with it p99 <= 100 µs; the worst of its first second is \
            printed beside); every speaker's output equals the source sample for sample apart from the counted \
            correction samples.
            Part 2, real time (--realtime-seconds, 0 skips): 'tuneup sim speaker --count SPEAKERS' in a process of its \
            own with the same drift range, audio jitter and recordings; this process streams to it over UDP loopback. \
            Goals: the controller's CPU time <= 5 % of the audio's duration; spread between the recordings p99 <= \
            100 µs (real scheduling, no control-path jitter); their fidelity is printed.
            Exits non-zero when a goal is missed.
            """)

    @Option(help: "Speakers from the start.") var speakers = 8
    @Option(help: "Seconds of music.") var seconds = 60.0
    @Option(help: "Drift range, ± ppm.") var maxDriftPpm = 500.0
    @Option(help: "Link jitter, ms (uniform per audio datagram).") var jitterMs = 20.0
    @Option(help: "Audio datagram loss, % (retransmissions too; the control path loses nothing: TCP).") var loss = 0.0
    @Flag(help: "No lost-packet recovery (protocol version 1 in the virtual run: lost packets play as silence).")
    var noRecovery = false
    @Option(help: "When the extra speaker is added, seconds after play.") var join = 20.0
    @Option(help: "Seconds of the real-time run (0: skip it).") var realtimeSeconds = 20.0
    @Option(help: "Seed of drifts, offsets and jitter.") var seed: UInt64 = 1
    @Option(help: "Path of the tuneup binary (default: next to tuneup-bench).") var tuneup: String?

    func validate() throws {
        guard (2...64).contains(speakers) else { throw ValidationError("--speakers must be 2...64") }
        guard loss.isFinite, (0...50).contains(loss) else { throw ValidationError("--loss must be 0...50 (percent)") }
        guard seconds >= 2, join < seconds - 1 else { throw ValidationError("--seconds must be >= 2 and --join at least 1 s before the end") }
    }

    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)

    func run() async throws {
        var missed: [String] = []
        try runVirtual(&missed)
        if realtimeSeconds > 0 { try await runRealtime(&missed) }
        if missed.isEmpty {
            print("all goals met")
        } else {
            print("MISSED: " + missed.joined(separator: "; "))
            throw ExitCode(1)
        }
    }

    func drifts() -> [Double] {
        var rng = SeededRandom(seed: seed)
        return (0..<speakers).map { _ in Double.random(in: -maxDriftPpm...maxDriftPpm, using: &rng).rounded() }
    }

    func runVirtual(_ missed: inout [String]) throws {
        let jitter = UInt64(jitterMs * 1e6)
        var rng = SeededRandom(seed: seed &+ 99)
        let audio = LinkJitter(maximum: jitter, loss: loss / 100)
        let control = LinkJitter(maximum: jitter, probability: 0.3, floor: 50_000)
        var specs = drifts().map { ppm in
            VirtualPlayback.Speaker(clock: DACClock(offset: Int64.random(in: 0...10_000_000_000, using: &rng), driftPPM: ppm), audio: audio, control: control)
        }
        specs.append(VirtualPlayback.Speaker(clock: DACClock(offset: 123_456_789, driftPPM: -maxDriftPpm * 0.9), audio: audio, control: control,
                                             joinsAfter: join))
        var config = VirtualPlayback.Configuration(speakers: specs)
        config.format = Self.format
        config.seconds = seconds
        config.seed = seed
        config.recovery = !noRecovery
        let source = GeneratedSignal(format: Self.format, seconds: seconds, seed: seed)
        let wall = ContinuousClock.now
        let r = VirtualPlayback(config, source: source).run()
        let elapsed = ContinuousClock.now - wall
        let rate = UInt64(Self.format.sampleRate)
        let total = UInt64(seconds * Double(rate))
        let main = Array(r.speakers.prefix(speakers))
        let spreads = PlaybackAnalysis.spreads(main.map(\.log), frames: 0..<total, stride: rate / 100)
        let p50 = PlaybackAnalysis.percentile(spreads, 50), p99 = PlaybackAnalysis.percentile(spreads, 99)
        let maxSpread = PlaybackAnalysis.percentile(spreads, 100)
        print("VIRTUAL TIME: \(speakers) speakers + 1 added at \(join.formatted()) s, \(seconds.formatted()) s of \(Self.format), buffer 200 ms, "
            + "audio jitter 0-\(jitterMs.formatted()) ms, audio loss \(loss.formatted()) %\(noRecovery ? " (no recovery)" : ""), "
            + "control jitter 30 % up to \(jitterMs.formatted()) ms; run took \(elapsed)")
        print(String(format: "  spread between speakers, same frame (every 10 ms, %d frames): p50 %.1f µs  p99 %.1f µs  max %.1f µs (goal p99 <= 100 µs)",
                     spreads.count, p50 / 1000, p99 / 1000, maxSpread / 1000))
        if p99 > 100_000 { missed.append("virtual sync p99 \(Int(p99 / 1000)) µs") }
        let starts = main.map { Double(($0.firstOut ?? .max) &- r.playAt) / 1e6 }
        print(String(format: "  play to first sample out: max %.1f ms over the speakers (goal <= 300 ms)", starts.max() ?? 0))
        if (starts.max() ?? .infinity) > 300 { missed.append("start latency \(Int(starts.max() ?? 0)) ms") }
        for (k, s) in r.speakers.enumerated() {
            let f = PlaybackAnalysis.fidelity(s.log, pcm: s.pcm, source: source)
            let st = s.log.statistics
            let exact = f.isExact(given: st)
            if !exact { missed.append("speaker \(k) output differs from the source") }
            print(String(format: "  speaker %d: drift %+5.0f ppm  corrected samples %5d (repeated %d, skipped %d)  frames %d  fidelity %@  clock maps %d",
                         k, s.log.clock.driftPPM, st.correctedSamples, st.repeatedSamples, st.skippedSamples, st.renderedFrames,
                         exact ? "exact" : "DIFFERS (\(f.mismatchedFrames) frames)", s.mapsSent))
            if loss > 0 {
                let rec = s.recovery
                print("      lost packets \(rec.missing + rec.untracked): recovered \(st.recoveredPackets), given up \(rec.expired), not asked for \(rec.untracked); "
                    + "\(s.resendRequests) resend requests, \(s.resentPackets) packets resent; frames played as silence \(st.lostFrames), "
                    + "late \(st.lateFrames); the rest equals the source\(f.mismatchedFrames == 0 ? "" : " EXCEPT \(f.mismatchedFrames) frames")")
            }
        }
        if loss > 0 {
            let lost = r.speakers.reduce(UInt64(0)) { $0 + $1.log.statistics.lostFrames }
            let recovered = r.speakers.reduce(UInt64(0)) { $0 + $1.log.statistics.recoveredPackets }
            let missing = r.speakers.reduce(UInt64(0)) { $0 + $1.recovery.missing + $1.recovery.untracked }
            print("  loss \(loss.formatted()) %: \(missing) packets lost on the way over all speakers, \(recovered) recovered, "
                + "\(lost) frames played as silence (goal with recovery: 0)")
            if !noRecovery, lost > 0 { missed.append("\(lost) frames lost to packet loss") }
        }
        let joiner = r.speakers[speakers]
        let joinDelay = Double((joiner.firstOut ?? .max) &- joiner.addedAt) / 1e6
        // The frames heard from its first sample on, and from 1 s after it was added on ("in sync within 1 s").
        let from = min(joiner.log.firstSource?.sourceFrame ?? total, total)
        let synced = min(total, UInt64(join * Double(rate)) + rate)
        let firstSecond = PlaybackAnalysis.spreads(r.speakers.map(\.log), frames: from..<max(from, synced), stride: rate / 100)
        let joinSpreads = PlaybackAnalysis.spreads(r.speakers.map(\.log), frames: max(from, synced)..<total, stride: rate / 100)
        let joinP99 = PlaybackAnalysis.percentile(joinSpreads, 99)
        print(String(format: "  speaker added at %.0f s: first sample out %.1f ms later (goal <= 1000 ms); spread with it from 1 s after it was added "
            + "p99 %.1f µs (goal <= 100 µs), before that max %.1f µs", join, joinDelay, joinP99 / 1000, (firstSecond.max() ?? 0) / 1000))
        if joinDelay > 1000 || joinP99 > 100_000 { missed.append("join \(Int(joinDelay)) ms, p99 \(Int(joinP99 / 1000)) µs") }
    }

    func runRealtime(_ missed: inout [String]) async throws {
        let binary = try Bench.tuneupBinary(tuneup)
        let dir = NSTemporaryDirectory() + "tuneup-speaker-sync-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sim = try SimulatorProcess(tuneup: binary, kind: "speaker", count: speakers, extra: [
            "--drift-random", "\(maxDriftPpm)", "--offset-ms", "700", "--jitter-ms", "\(jitterMs)", "--record", dir,
            "--discovery-port", "0", "--seed", "\(seed)", "--loss", "\(loss)",
        ])
        let endpoints = sim.addresses.map { a -> (host: String, port: UInt16) in
            let i = a.lastIndex(of: ":")!
            return (String(a[..<i]), UInt16(a[a.index(after: i)...])!)
        }
        let controller = try await SpeakerController.connect(endpoints)
        try await controller.setVolumeAll(50)
        try await controller.addAllToSession()
        try await Task.sleep(for: .milliseconds(1500))  // clocks tracked before play, as the SDK's speakers are added at start
        let events = try await controller.playerEvents()
        let source = GeneratedSignal(format: Self.format, seconds: realtimeSeconds, seed: seed)
        let cpu0 = ProcessCPU.ofThisProcess()
        let playAt = monotonicNanoseconds()
        try await controller.play(source, title: "bench")
        for await e in events where e == .ended || e == .stateChanged(.stopped) { break }
        let cpu = ProcessCPU.ofThisProcess() - cpu0
        let recovery = await controller.recoveryStatistics
        await controller.close()
        sim.quit()
        let share = cpu / realtimeSeconds
        print("REAL TIME: \(speakers) speakers in 'tuneup sim speaker' (drift within ±\(maxDriftPpm.formatted()) ppm, audio jitter 0-\(jitterMs.formatted()) ms, loss \(loss.formatted()) %), "
            + "\(realtimeSeconds.formatted()) s of \(Self.format) over UDP loopback")
        print(String(format: "  controller CPU: %.3f s for %.1f s of audio = %.2f %% of one core (goal <= 5 %%)", cpu, realtimeSeconds, share * 100))
        if share > 0.05 { missed.append("controller CPU \(String(format: "%.1f", share * 100)) %") }
        var logs: [RenderLog] = []
        var exact = 0
        var corrections: [UInt64] = []
        var silent: [UInt64] = []
        for k in 0..<speakers {
            guard let name = try FileManager.default.contentsOfDirectory(atPath: dir).first(where: { $0.hasPrefix("speaker-\(k)-") && $0.hasSuffix(".render.log") }) else {
                print("  speaker \(k): no recording")
                continue
            }
            let log = try RenderLog(text: String(contentsOfFile: dir + "/" + name, encoding: .utf8))
            let wav = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/" + name.replacingOccurrences(of: ".render.log", with: ".wav"))))
            let (_, offset, _) = try WAV.parse(Array(wav.prefix(4096)), fileSize: UInt64(wav.count))
            let f = PlaybackAnalysis.fidelity(log, pcm: Array(wav[Int(offset)...]), source: source)
            if f.mismatchedFrames == 0 { exact += 1 }
            corrections.append(f.repeatedFrames + f.missingFrames)
            silent.append(Self.silentSlotsInside(log))
            logs.append(log)
        }
        let rate = UInt64(Self.format.sampleRate)
        let spreads = PlaybackAnalysis.spreads(logs, frames: 0..<UInt64(realtimeSeconds * Double(rate)), stride: rate / 100)
        let spreadP99 = PlaybackAnalysis.percentile(spreads, 99)
        let starts = logs.compactMap { log in log.firstSource.map { (log.trueTime(ofSlot: $0.slot) - Double(playAt)) / 1e6 } }
        print(String(format: "  spread between speakers: p50 %.1f µs  p99 %.1f µs (goal <= 100 µs)  max %.1f µs; play to first sample out max %.1f ms; "
            + "%d of %d recordings equal the source apart from %@ corrected samples",
                     PlaybackAnalysis.percentile(spreads, 50) / 1000, spreadP99 / 1000,
                     PlaybackAnalysis.percentile(spreads, 100) / 1000, starts.max() ?? 0, exact, logs.count,
                     corrections.map(String.init).joined(separator: "/")))
        if logs.count < speakers || spreadP99 > 100_000 {
            missed.append("real-time spread p99 \(Int(spreadP99 / 1000)) µs of \(logs.count) recordings")
        }
        if loss > 0 {
            print("  loss \(loss.formatted()) %: the speakers asked for \(recovery.requested) packets, \(recovery.resent) resent, "
                + "\(recovery.unavailable) no longer held; silent slots inside the stream per recording: \(silent.map(String.init).joined(separator: "/"))")
        }
    }

    /// Silent slots between a recording's first and last source frame (lost frames, and repeats of them).
    static func silentSlotsInside(_ log: RenderLog) -> UInt64 {
        guard let first = log.runs.firstIndex(where: { $0.kind == .source }),
              let last = log.runs.lastIndex(where: { $0.kind == .source }) else { return 0 }
        return log.runs[first...last].filter { $0.kind == .silence }.reduce(0) { $0 + $1.count }
    }
}
