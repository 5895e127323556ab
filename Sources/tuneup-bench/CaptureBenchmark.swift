import ArgumentParser
import Capture
import Firmware
import FirmwareUpdate
import Foundation
import HeadsetSimulator
import Support
import Transport

/// The cost of `--capture` (issue 32 §1): the flash benchmark's 512 KiB flash over an SPP-like link, with and without
/// every frame recorded in a pcapng file, alternately in one run.
struct CaptureBenchmark {
    var flash = FlashBenchmark()
    var runs = 3
    var directory: String

    struct Report {
        var without: [Double]
        var with: [Double]
        var captureBytes: Int
        /// The project's median (nearest rank, as every benchmark's): NaN for no runs.
        static func median(_ v: [Double]) -> Double { Percentile.of(sorted: v.sorted(), 50) ?? .nan }
        var ratio: Double { Self.median(with) / Self.median(without) }
    }

    func once(_ image: FirmwareImage, capture: String?) async throws -> (seconds: Double, bytes: Int) {
        let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 1))
        let link = flash.conditions()
        var writer: CaptureWriter?
        if let capture { writer = try await CaptureWriter.create(path: capture, application: "tuneup-bench", warn: { print("warning: \($0)") }) }
        let recording = writer.map { LinkCapture(writer: $0, family: .lightX) }
        let updater = FirmwareUpdater(image: image, options: UpdateOptions(resume: false)) {
            let conditioned = ConditionedTransport(wrapping: await device.connect(), conditions: link)
            return recording?.wrap(conditioned, name: "sim") ?? conditioned
        }
        let start = ContinuousClock.now
        _ = try await updater.run()
        await writer?.close()
        let wall = ContinuousClock.now - start
        await device.shutdown()
        let bytes = capture.flatMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int } ?? 0
        return (Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18, bytes)
    }

    func run(progress: (String) -> Void) async throws -> Report {
        let image = try flash.makeImage()
        var report = Report(without: [], with: [], captureBytes: 0)
        for i in 0..<runs {
            progress("run \(i + 1)/\(runs) without --capture ...")
            report.without.append(try await once(image, capture: nil).seconds)
            let path = directory + "/bench-\(i).pcapng"
            progress("run \(i + 1)/\(runs) with --capture ...")
            let r = try await once(image, capture: path)
            report.with.append(r.seconds)
            report.captureBytes = r.bytes
            try? FileManager.default.removeItem(atPath: path)
        }
        return report
    }
}

extension Bench {
    struct CaptureBench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "capture",
            abstract: "A 512 KiB flash with and without --capture (pcapng written as it goes), alternately: wall ratio.",
            discussion: "Goal (issue 32 §1, release build): the median with a capture <= 1.05x the median without.")
        @Option(help: "Runs of each kind (alternating).") var runs = 3
        @Option(help: "Where the captures are written (removed after each run).") var directory = NSTemporaryDirectory()

        func run() async throws {
            let r = try await CaptureBenchmark(runs: runs, directory: directory).run { print($0) }
            print(String(format: "without: median %.2f s   with --capture: median %.2f s (%d bytes)   ratio %.3f (goal <= 1.05)%@",
                         CaptureBenchmark.Report.median(r.without), CaptureBenchmark.Report.median(r.with), r.captureBytes, r.ratio,
                         r.ratio <= 1.05 ? "" : "   MISSED"))
        }
    }
}
