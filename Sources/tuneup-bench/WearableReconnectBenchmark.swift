import ArgumentParser
import Foundation
import Glibc
import Spawn
import Support
import Synchronization
import Transport
import Wearable
import WearableSession

/// `tuneup-bench wearable-reconnect`: a library session with reconnecting on, against a `tuneup sim wearable` process
/// over TCP: `drop-link` (the device is back at once) and the simulator killed (SIGKILL) and started again on the same
/// port after a downtime. Each try: the time from the device being back (the drop-link line sent; the new simulator
/// printing its address, so listening) to the first sample of the new link arriving (`hostTime` on the session's
/// clock). Goal: <= 2 s in every try.
struct WearableReconnectBenchmark {
    let tuneup: String
    let tries: Int
    /// How long the killed simulator stays away (varied per try so the device comes back at different points of the
    /// backoff): `downtime + (k mod 5) * 170 ms`.
    let downtime: Duration

    struct Result {
        var kind: String
        var seconds: [Double]
        /// By the project's one percentile rule (nearest rank); not a number when no try finished.
        var median: Double { Percentile.of(sorted: seconds.sorted(), 50) ?? .nan }
        var max: Double { seconds.max() ?? .nan }
        var within2s: Int { seconds.filter { $0 <= 2 }.count }
    }

    /// What the listeners saw: every sample's arrival, the observed losses.
    final class Watch: Sendable {
        private let state = Mutex<(samples: [Duration], losses: Int, reconnects: Int)>(([], 0, 0))
        func sample(_ t: Duration) { state.withLock { $0.samples.append(t) } }
        func lost() { state.withLock { $0.losses += 1 } }
        func reconnected() { state.withLock { $0.reconnects += 1 } }
        var losses: Int { state.withLock { $0.losses } }
        var reconnects: Int { state.withLock { $0.reconnects } }
        /// The first sample that arrived after `t`.
        func first(after t: Duration) -> Duration? { state.withLock { s in s.samples.first { $0 > t } } }
    }

    /// Waits (checking every 5 ms, at most `seconds`) until `done` holds.
    static func until(_ what: String, seconds: Double = 30, _ done: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !(await done()) {
            guard ContinuousClock.now < deadline else { throw BenchError("gave up waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    static func startSimulator(_ tuneup: String, listen: String) async throws -> (ChildProcess, String) {
        let p = try ChildProcess(tuneup, ["sim", "wearable", "--listen", listen], stdin: .pipe, stderr: .null)
        guard let address = await p.output!.lines(1, timeout: 30).first else {
            p.terminate()
            throw BenchError("sim wearable printed no address")
        }
        return (p, address)
    }

    func run() async throws -> [Result] {
        var (sim, address) = try await Self.startSimulator(tuneup, listen: "tcp:127.0.0.1:0")
        defer { sim.signal(SIGKILL) }
        let session = WearableDeviceSession(address: try DeviceAddress(parsing: address), connector: TransportConnector(),
                                            options: .init(reconnect: ReconnectPolicy()))
        let watch = Watch()
        let events = await session.events()
        let eventTask = Task {
            for await e in events {
                if case .didLoseLink = e { watch.lost() }
                if case .didReconnect = e { watch.reconnected() }
            }
        }
        defer { eventTask.cancel() }
        try await session.open()
        let readings = await session.sensorReadings()
        let sampleTask = Task { for await r in readings { watch.sample(r.hostTime) } }
        defer { sampleTask.cancel() }
        try await session.configureSensors { $0.enable(sensor: .accelerometer, at: ._20ms) }

        var results: [Result] = []
        for kind in ["drop-link", "restart"] {
            var seconds: [Double] = []
            for k in 0..<tries {
                // Streaming first.
                let now = session.elapsedTime
                try await Self.until("samples before try \(k)") { watch.first(after: now) != nil }
                let losses = watch.losses, reconnects = watch.reconnects
                let back: Duration
                if kind == "drop-link" {
                    back = session.elapsedTime
                    sim.write("drop-link\n")
                    try await Self.until("the loss") { watch.losses > losses }
                } else {
                    sim.signal(SIGKILL)
                    _ = await sim.exited()
                    try await Self.until("the loss") { watch.losses > losses }
                    try await Task.sleep(for: downtime + .milliseconds(170 * (k % 5)))
                    (sim, _) = try await Self.startSimulator(tuneup, listen: address)
                    back = session.elapsedTime
                }
                try await Self.until("the reconnect of try \(k)") { watch.reconnects > reconnects }
                // Samples of the old link arrived before the loss was observed; the new link's after it.
                try await Self.until("a sample after try \(k)") { watch.first(after: back) != nil }
                let first = watch.first(after: back)!
                seconds.append((first - back).seconds)
            }
            results.append(Result(kind: kind, seconds: seconds))
        }
        await session.close()
        sim.write("quit\n")
        _ = await sim.exited(within: 10)
        return results
    }
}

/// `tuneup-bench wearable-record`: a long recording without waiting for it: `sim wearable --time-scale` runs the
/// device's clock faster, `tuneup wearable record` records accelerometer and gyroscope at 20 ms (100 samples per
/// second of device time) until it holds the samples, then `tuneup wearable plot` draws it. Peak RSS of each
/// (wait4's ru_maxrss) and plot's wall time. Goals: record <= 50 MB, plot <= 5 s and <= 150 MB.
struct WearableRecordBenchmark {
    let tuneup: String
    let samples: Int
    let timeScale: Double
    let directory: String

    struct Result {
        var samplesWritten: Int
        var recordSeconds: Double, recordPeakMB: Double
        var plotSeconds: Double, plotPeakMB: Double
        var bytes: Int
    }

    /// Peak resident memory of a running process in MB (VmHWM), read off the pool; nil once it is gone.
    static func peakMB(_ pid: pid_t) async -> Double? {
        (try? await Blocking.run("wearable-record-proc") { () -> Double? in
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                  let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                  let kb = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return nil }
            return kb / 1024
        }) ?? nil
    }

    /// Runs `args` to its end; its peak RSS is wait4's `ru_maxrss` of the child (VmHWM, read every 50 ms while it
    /// runs, only where that is missing).
    func measure(_ args: [String]) async throws -> (seconds: Double, peakMB: Double, output: String) {
        let started = ContinuousClock.now
        let p = try ChildProcess(tuneup, args, stdin: .null, stderr: .null)
        var peak = 0.0
        while p.isRunning {
            if let mb = await Self.peakMB(p.processIdentifier) { peak = max(peak, mb) }
            try await Task.sleep(for: .milliseconds(50))
        }
        let seconds = (ContinuousClock.now - started).seconds
        if let kb = p.peakResidentKilobytes { peak = Double(kb) / 1024 }
        let output = await p.output!.finishedText()
        guard p.terminationStatus == 0 else { throw BenchError("tuneup \(args.joined(separator: " ")) exited \(p.terminationStatus)") }
        return (seconds, peak, output)
    }

    func run() async throws -> Result {
        let (sim, address) = try await {
            let p = try ChildProcess(tuneup, ["sim", "wearable", "--listen", "tcp:127.0.0.1:0", "--time-scale", String(timeScale)],
                                     stdin: .pipe, stderr: .null)
            guard let a = await p.output!.lines(1, timeout: 30).first else { p.terminate(); throw BenchError("sim wearable printed no address") }
            return (p, a)
        }()
        defer { sim.signal(SIGKILL) }
        // 100 samples per second of device time; a little extra for the opening.
        let hostSeconds = Double(samples) / 100 / timeScale + 1
        let base = directory + "/long"
        let record = try await measure(["wearable", "record", base, "--device", address, "--sensor", "accelerometer", "--sensor", "gyroscope",
                                        "--period", "20ms", "--gesture", "none", "--duration", String(format: "%.3fs", hostSeconds), "--format", "json"])
        let written = (try? JSONSerialization.jsonObject(with: Data(record.output.utf8)) as? [String: Any])?["samples"] as? Int ?? -1
        let plot = try await measure(["wearable", "plot", base + ".jsonl", "--output", base + ".svg", "--no-png"])
        let bytes = (try? await Blocking.run("wearable-record-size") { (try? FileManager.default.attributesOfItem(atPath: base + ".jsonl")[.size] as? Int) ?? 0 }) ?? 0
        sim.write("quit\n")
        _ = await sim.exited(within: 10)
        return Result(samplesWritten: written, recordSeconds: record.seconds, recordPeakMB: record.peakMB, plotSeconds: plot.seconds,
                      plotPeakMB: plot.peakMB, bytes: bytes)
    }
}


extension Bench {
    struct WearableReconnectBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "wearable-reconnect",
            abstract: "Wearable reconnect: samples flowing again after drop-link and after a killed and restarted simulator.",
            discussion: """
                A library session with reconnecting on (100 ms doubling to 1 s between attempts) streams the \
                accelerometer at 20 ms from 'tuneup sim wearable' over TCP. Each try measures the time from the device \
                being back (drop-link: the line sent, the device never went away; restart: the new simulator on the \
                same port printed its address) to the first sample of the new link. Goal: <= 2 s in every try. Exits 1 \
                when a try misses it.
                """)
        @Option(help: "Tries of each kind.") var tries = 10
        @Option(help: "Milliseconds the killed simulator stays away (plus 0...680 ms varied per try).") var downtime = 300
        @Option(help: "Path of the tuneup binary (default: next to tuneup-bench).") var tuneup: String?

        func run() async throws {
            let binary = try Bench.tuneupBinary(tuneup)
            let results = try await WearableReconnectBenchmark(tuneup: binary, tries: tries, downtime: .milliseconds(downtime)).run()
            var failed = false
            for r in results {
                let ok = r.within2s == r.seconds.count
                failed = failed || !ok
                print(String(format: "%@: %d tries, back -> first sample: median %.3f s, max %.3f s, %d of %d within 2 s%@", r.kind,
                             r.seconds.count, r.median, r.max, r.within2s, r.seconds.count, ok ? "" : "   MISSED"))
                print("  " + r.seconds.map { String(format: "%.3f", $0) }.joined(separator: " "))
            }
            if failed { throw ExitCode(1) }
        }
    }

    struct WearableRecordBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "wearable-record",
            abstract: "A 30-minute wearable recording (180k samples) faster than real time: record's peak RSS, plot's wall time and RSS.",
            discussion: """
                'tuneup sim wearable --time-scale N' runs the device clock N times faster; 'tuneup wearable record' \
                records accelerometer and gyroscope at 20 ms (100 samples per second of device time) until it holds \
                --samples; then 'tuneup wearable plot' draws the recording. Peak RSS is each child's ru_maxrss (wait4). \
                Goals: record <= 50 MB, plot <= 5 s wall and <= 150 MB. Build with -c release for figures. Exits 1 \
                when a goal is missed.
                """)
        @Option(help: "Samples to record (180000: 30 minutes of two sensors at 20 ms).") var samples = 180_000
        @Option(help: "The simulator's --time-scale.") var timeScale = 30.0
        @Option(help: "Path of the tuneup binary (default: next to tuneup-bench).") var tuneup: String?

        func run() async throws {
            let binary = try Bench.tuneupBinary(tuneup)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tuneup-bench-wearable-\(getpid())").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let r = try await WearableRecordBenchmark(tuneup: binary, samples: samples, timeScale: timeScale, directory: directory).run()
            let recordOK = r.recordPeakMB <= 50, plotOK = r.plotSeconds <= 5 && r.plotPeakMB <= 150
            print(String(format: "record: %d samples (%.1f MB of JSON Lines) in %.1f s at time scale %.0f; peak RSS %.1f MB (goal <= 50 MB)%@",
                         r.samplesWritten, Double(r.bytes) / 1e6, r.recordSeconds, timeScale, r.recordPeakMB, recordOK ? "" : "   MISSED"))
            print(String(format: "plot: %.2f s wall, peak RSS %.1f MB (goal <= 5 s, <= 150 MB)%@", r.plotSeconds, r.plotPeakMB, plotOK ? "" : "   MISSED"))
            if !(recordOK && plotOK) { throw ExitCode(1) }
        }
    }
}
