import ArgumentParser
import Foundation
import Spawn
import Support

/// The emulated flash against the live one (issue 32 §4): `tuneup flash` of the flash benchmark's 512 KiB image
/// against `tuneup sim headset --capture` (the live device, recorded on its side), then the same flash against
/// `tuneup sim headset --emulate` of that recording, alternately in one sitting; whole processes on TCP, as a user
/// (or CI replaying a recording) runs them.
struct EmulateBenchmark {
    var tuneup: String
    var runs = 3
    /// The live simulator's --time-scale (1: real flash and boot timing).
    var timeScale = 1.0
    var directory: String

    struct Report {
        var live: [Double]
        var emulated: [Double]
        var captureBytes: Int
        /// The project's median (nearest rank, as every benchmark's): NaN for no runs.
        static func median(_ v: [Double]) -> Double { Percentile.of(sorted: v.sorted(), 50) ?? .nan }
        var ratio: Double { Self.median(emulated) / Self.median(live) }
    }

    /// `tuneup sim headset ARGS` on TCP port 0 and its address (the first line of its stdout).
    func start(_ args: [String]) throws -> (ChildProcess, String) {
        let p = try ChildProcess(tuneup, ["sim", "headset", "--listen", "tcp:127.0.0.1:0"] + args, stdin: .pipe)
        guard let address = p.output!.linesBlocking(1, timeout: 60).first else {
            p.terminate()
            throw BenchError("tuneup sim headset \(args.joined(separator: " ")) printed no address: \(p.errors!.textBlocking(timeout: 5))")
        }
        return (p, address)
    }

    /// The wall time of `tuneup flash IMAGE --device ADDRESS` (a fresh state directory: nothing to resume).
    func flash(_ image: String, _ address: String, state: String) throws -> Double {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let start = DispatchTime.now()
        let p = try ChildProcess(tuneup, ["flash", image, "--device", address], environment: ["XDG_STATE_HOME": state, "TUNEUP_DEVICE": nil],
                                 stdout: .null)
        p.waitUntilExit()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        guard p.terminationStatus == 0 else { throw BenchError("tuneup flash against \(address) failed (\(p.shellStatus)): \(p.errors!.textBlocking())") }
        return seconds
    }

    func run(progress: (String) -> Void) throws -> Report {
        let image = directory + "/bench-512k.img"
        try Data(try FlashBenchmark().makeImage().bytes).write(to: URL(fileURLWithPath: image))
        defer { try? FileManager.default.removeItem(atPath: image) }
        var report = Report(live: [], emulated: [], captureBytes: 0)
        for i in 0..<runs {
            let capture = directory + "/emulate-\(i).pcapng"
            defer { try? FileManager.default.removeItem(atPath: capture) }
            progress("run \(i + 1)/\(runs): live, recorded with --capture ...")
            let (sim, live) = try start(["--battery-drain", "0", "--time-scale", "\(timeScale)", "--capture", capture])
            let liveSeconds: Double
            do {
                liveSeconds = try flash(image, live, state: directory + "/emulate-state-\(i)-live")
            } catch {
                sim.terminate()
                throw error
            }
            sim.write("quit\n")
            guard sim.waitUntilExit(within: 60) == .exit(0) else { throw BenchError("the live simulator did not end cleanly: \(sim.errors!.textBlocking())") }
            report.captureBytes = (try? FileManager.default.attributesOfItem(atPath: capture)[.size] as? Int) ?? 0

            progress("run \(i + 1)/\(runs): emulated (sim headset --emulate) ...")
            let (emulator, emulated) = try start(["--emulate", capture])
            let emulatedSeconds: Double
            do {
                emulatedSeconds = try flash(image, emulated, state: directory + "/emulate-state-\(i)-emulated")
            } catch {
                emulator.terminate()
                throw error
            }
            guard emulator.waitUntilExit(within: 60) == .exit(0) else {
                throw BenchError("the emulation did not complete: \(emulator.errors!.textBlocking())")
            }
            report.live.append(liveSeconds)
            report.emulated.append(emulatedSeconds)
            for side in ["live", "emulated"] { try? FileManager.default.removeItem(atPath: directory + "/emulate-state-\(i)-\(side)") }
        }
        return report
    }
}

extension Bench {
    struct EmulateBench: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "emulate",
            abstract: "A 512 KiB flash against the simulated headset recorded with --capture, then against 'sim headset --emulate' of it.",
            discussion: """
                Each run flashes with the tuneup binary next to this one: against 'tuneup sim headset --capture' \
                (the live device, recorded on its side), then against 'tuneup sim headset --emulate' of that \
                recording, which must complete (exit 0). Reports both medians and the ratio emulated/live (issue 32 \
                §4's closing figure; no goal).
                """)
        @Option(help: "Runs of each kind (alternating).") var runs = 3
        @Option(help: "The live simulator's --time-scale (1: real flash and boot timing).") var timeScale = 1.0
        @Option(help: "Where the image, the captures and the state directories are written (removed after each run).")
        var directory = NSTemporaryDirectory()
        @Option(help: "Path of the tuneup binary (default: next to tuneup-bench).") var tuneup: String?

        func validate() throws {
            guard runs >= 1 else { throw ValidationError("--runs must be 1 or more") }
        }

        func run() throws {
            let binary = try Bench.tuneupBinary(tuneup)
            let r = try EmulateBenchmark(tuneup: binary, runs: runs, timeScale: timeScale, directory: directory).run { print($0) }
            print("live: \(r.live.map { String(format: "%.2f", $0) }.joined(separator: " ")) s   emulated: \(r.emulated.map { String(format: "%.2f", $0) }.joined(separator: " ")) s")
            print(String(format: "live (time scale %g): median %.2f s   emulated: median %.2f s   ratio emulated/live %.3f   (capture %d bytes)",
                         timeScale, EmulateBenchmark.Report.median(r.live), EmulateBenchmark.Report.median(r.emulated), r.ratio, r.captureBytes))
        }
    }
}
