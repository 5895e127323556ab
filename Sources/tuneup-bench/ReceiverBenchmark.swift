import ArgumentParser
import Foundation
import Glibc
import Spawn
import SpeakerPlayback
import Support
import SpeakerSession
import Transport

/// `tuneup-bench speaker-receiver`: the CPU of `tuneup speaker receive` against a simulated speaker's, in one run.
struct SpeakerReceiverBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speaker-receiver",
        abstract: "CPU of 'tuneup speaker receive' (ALSA output) against 'tuneup sim speaker', idle and playing.",
        discussion: """
            Starts 'tuneup speaker receive' (its ALSA device alsa-lib's file plugin over null, defined in an asoundrc \
            of the run's own, or --alsa-device) and 'tuneup sim speaker --count 1' as processes of their own, measures \
            each one's CPU (utime + stime from /proc) while idle for --idle-seconds, then while this process plays \
            --seconds of generated 48 kHz stereo audio to both in sync over UDP loopback. Prints CPU seconds per audio \
            second and idle CPU as a share of one core for each, and the receiver's output size. \
            Goals (issue 19): the receiver's idle CPU <= 0.5 % of a core; playing, per audio second, at most the \
            simulated speaker's (snapclient's, about 0.006 s per audio s in docs/hkwirelesshd.md, is not run here: \
            it needs a snapserver). Exits non-zero when a goal is missed.
            """)

    @Option(help: "Seconds of audio played.") var seconds = 20.0
    @Option(help: "Seconds measured idle, before the stream.") var idleSeconds = 5.0
    @Option(help: "The receiver's ALSA device (default: a file capture in the run's directory).") var alsaDevice: String?
    @Option(help: "Path of the tuneup binary (default: next to tuneup-bench).") var tuneup: String?

    func validate() throws {
        guard seconds >= 2, seconds <= 3600 else { throw ValidationError("--seconds must be 2...3600") }
        guard idleSeconds >= 1, idleSeconds <= 600 else { throw ValidationError("--idle-seconds must be 1...600") }
    }

    func run() async throws {
        let binary = try Bench.tuneupBinary(tuneup)
        let dir = NSTemporaryDirectory() + "tuneup-speaker-receiver-\(getpid())"
        let alsaDevice = alsaDevice
        // The processes are started, and every file and /proc read, on the blocking executor.
        let (receiver, receiverAddress, sim, device) = try await Blocking.perform("start") { () throws -> (ChildProcess, String, SimulatorProcess, String) in
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            var environment: [String: String?] = [:]
            let device: String
            if let alsaDevice {
                device = alsaDevice
            } else {
                try "pcm.capture { type file slave.pcm { type null } file \"\(dir)/out.raw\" format raw }\n"
                    .write(toFile: dir + "/asoundrc", atomically: true, encoding: .utf8)
                environment["ALSA_CONFIG_PATH"] = dir + "/asoundrc"
                device = "capture"
            }
            let receiver = try ChildProcess(binary, ["speaker", "receive", "--alsa-device", device, "--listen", "tcp:127.0.0.1:0",
                                                     "--audio-port", "0", "--discovery-port", "0"],
                                            environment: environment, stdin: .pipe, stderr: .pipe)
            guard let address = receiver.output!.linesBlocking(1, timeout: 60).first else {
                receiver.terminate()
                throw BenchError("the receiver printed no address: \(receiver.errors!.textBlocking(timeout: 5))")
            }
            let sim = try SimulatorProcess(tuneup: binary, kind: "speaker", count: 1, extra: ["--discovery-port", "0"])
            return (receiver, address, sim, device)
        }
        defer {
            if receiver.isRunning { receiver.terminate() }
            try? FileManager.default.removeItem(atPath: dir)
        }
        let pids = [("receiver", receiver.processIdentifier), ("simulated speaker", sim.pid)]
        let cpu = { @Sendable () async throws -> [Double] in try await Blocking.perform("cpu") { pids.map { ProcessCPU.of($0.1) } } }

        // Idle: started, nobody connected.
        let idle0 = try await cpu()
        let idleStart = monotonicNanoseconds()
        try await Task.sleep(for: .seconds(idleSeconds))
        let idleWall = Double(monotonicNanoseconds() - idleStart) / 1e9
        let idle = zip(try await cpu(), idle0).map { $0 - $1 }

        let endpoints = [receiverAddress, sim.addresses[0]].map { a -> (host: String, port: UInt16) in
            let i = a.lastIndex(of: ":")!
            return (String(a[..<i]), UInt16(a[a.index(after: i)...])!)
        }
        let controller = try await SpeakerController.connect(endpoints)
        try await controller.setVolumeAll(50)
        try await controller.addAllToSession()
        try await Task.sleep(for: .milliseconds(1500))
        let events = try await controller.playerEvents()
        let format = try AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)
        let source = GeneratedSignal(format: format, seconds: seconds, seed: 1)
        let play0 = try await cpu()
        try await controller.play(source, title: "bench")
        for await e in events where e == .ended || e == .stateChanged(.stopped) { break }
        let playing = zip(try await cpu(), play0).map { $0 - $1 }
        await controller.close()
        let summary = try await Blocking.perform("stop") { () -> String in
            sim.quit()
            receiver.write("quit\n")
            receiver.waitUntilExit(within: 30)
            return receiver.errors!.textBlocking(timeout: 5).split(separator: "\n").last.map(String.init) ?? ""
        }

        print("speaker-receiver: \(seconds.formatted()) s of \(format) to 'tuneup speaker receive' (ALSA '\(device)') and 'tuneup sim speaker', UDP loopback")
        for (k, (name, _)) in pids.enumerated() {
            print(String(format: "  %@: playing %.4f CPU s per audio s (%.3f s); idle %.3f %% of one core (%.3f s in %.1f s)",
                         name, playing[k] / seconds, playing[k], idle[k] / idleWall * 100, idle[k], idleWall))
        }
        let ratio = playing[1] > 0 ? playing[0] / playing[1] : .infinity
        print(String(format: "  receiver / simulated speaker, playing: %.2f×", ratio))
        let size = try await Blocking.perform("size") { (try? FileManager.default.attributesOfItem(atPath: dir + "/out.raw"))?[.size] as? Int }
        if alsaDevice == nil, let size {
            print(String(format: "  receiver output: %.2f s of audio captured", Double(size) / Double(format.bytesPerFrame) / 48_000))
        }
        print("  receiver: \(summary)")
        var missed: [String] = []
        if idle[0] / idleWall > 0.005 { missed.append(String(format: "receiver idle CPU %.2f %%", idle[0] / idleWall * 100)) }
        if ratio > 1 { missed.append(String(format: "receiver CPU %.2f× the simulated speaker's", ratio)) }
        if missed.isEmpty { print("all goals met") } else {
            print("MISSED: " + missed.joined(separator: "; "))
            throw ExitCode(1)
        }
    }

}
