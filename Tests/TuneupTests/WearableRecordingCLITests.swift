import Foundation
import Glibc
import Testing

/// Issue 20, recordings: orientation in the records and the plot.
@Suite("tuneup wearable: recordings (orientation, metadata, replay)", .serialized)
struct WearableRecordingCLITests {
    static func lines(_ path: String) throws -> [[String: Any]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try json(String($0)) }
    }

    /// A game rotation recording carries yaw, pitch and roll (JSON and CSV, agreeing with the quaternion), and
    /// `plot --orientation` adds their panel.
    @Test func orientationIsRecordedAndPlotted() async throws {
        let dir = Scratch.directory
        let r = try await CLI.run(["wearable", "record", dir + "/head", "--sensor", "gameRotation", "--period", "40ms", "--gesture", "none",
                                   "--duration", "0.5", "--device", "sim:wearable:3", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let samples = try Self.lines(dir + "/head.jsonl").filter { $0["type"] as? String == "sample" }
        #expect(samples.count >= 5)
        for s in samples {
            guard let x = s["x"] as? Double, let y = s["y"] as? Double, let z = s["z"] as? Double, let w = s["w"] as? Double,
                  let yaw = s["yaw"] as? Double, let pitch = s["pitch"] as? Double, let roll = s["roll"] as? Double else {
                Issue.record("a sample without its quaternion or angles: \(s)")
                continue
            }
            // The yaw of the quaternion, by the docs' formula.
            let expected = atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)) * 180 / .pi
            #expect(abs(yaw - expected) < 0.001 && abs(pitch) <= 90 && abs(roll) <= 180, "\(s)")
        }
        let csv = try String(contentsOfFile: dir + "/head.csv", encoding: .utf8).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let header = csv.first { $0.hasPrefix("kind,") }?.split(separator: ",").map(String.init) ?? []
        let yawColumn = try #require(header.firstIndex(of: "yaw_deg"))
        #expect(header[yawColumn + 1] == "pitch_deg" && header[yawColumn + 2] == "roll_deg")
        let firstRow = try #require(csv.first { $0.hasPrefix("sample,") }).split(separator: ",", omittingEmptySubsequences: false)
        #expect(Double(firstRow[yawColumn]) == samples.first?["yaw"] as? Double)

        let plain = try await CLI.run(["wearable", "plot", dir + "/head.jsonl", "--no-png", "--format", "json"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(try json(plain.stdout)["panels"] as? [String] == ["gameRotation"], "\(plain.stdout)")
        let plot = try await CLI.run(["wearable", "plot", dir + "/head.jsonl", "--orientation", "--no-png", "--format", "json"])
        #expect(plot.status == 0, "\(plot.stderr)")
        #expect(try json(plot.stdout)["panels"] as? [String] == ["gameRotation", "gameRotation orientation"], "\(plot.stdout)")
        let svg = try String(contentsOfFile: dir + "/head.svg", encoding: .utf8)
        #expect(svg.contains(#"id="panel-gameRotation-orientation" data-sensor="gameRotation" data-kind="orientation""#))
        for angle in ["yaw", "pitch", "roll"] { #expect(svg.contains(#"data-component="\#(angle)""#)) }
    }

    /// `--orientation` on a recording without quaternions says so on stderr and plots the rest (the panel computed
    /// from a quaternion alone, as in recordings made before the angles: WearableRecordingTests' PlotTests).
    @Test func aPlotWithoutQuaternionsSaysItHasNoOrientation() async throws {
        let dir = Scratch.directory
        try WearableOutputCLITests.recording(dir + "/accel.jsonl")
        let none = try await CLI.run(["wearable", "plot", dir + "/accel.jsonl", "--orientation", "--no-png"])
        #expect(none.status == 0 && none.stderrLines == ["tuneup: no orientation panel: \(dir)/accel.jsonl holds no rotation or game rotation samples"],
                "\(none.stderr)")
    }

    /// `record` starts with its metadata, every sample has epochMs = time zero + deviceTime, and --split-by-sensor
    /// writes one CSV per sensor with unit-bearing headers.
    @Test func recordingsStartWithTheirMetadataAndSplitBySensor() async throws {
        let dir = Scratch.directory
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let r = try await CLI.run(["wearable", "record", dir + "/split", "--sensor", "accelerometer", "--sensor", "gyroscope", "--period", "40ms",
                                   "--split-by-sensor", "--duration", "0.5", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        let written = try json(r.stdout)
        #expect(written["split"] as? [String] == [dir + "/split.accelerometer.csv", dir + "/split.gyroscope.csv", dir + "/split.gestures.csv"])
        let lines = try Self.lines(dir + "/split.jsonl")
        let metadata = try #require(lines.first?["metadata"] as? [String: Any], "the first line is the metadata")
        #expect(lines.first?["type"] as? String == "metadata" && (metadata["tool"] as? String)?.hasPrefix("tuneup ") == true)
        #expect(metadata["format"] as? String == "tuneup-wearable-recording" && metadata["device"] as? String == "sim:wearable")
        #expect((metadata["sensors"] as? [[String: Any]])?.compactMap { $0["sensor"] as? String } == ["accelerometer", "gyroscope"])
        #expect((metadata["deviceInformation"] as? [String: Any])?["productID"] as? Int == 0x4020)
        let zero = try #require(metadata["epochMsAtDeviceTimeZero"] as? Int64)
        let samples = lines.filter { $0["type"] as? String == "sample" }
        #expect(samples.count >= 10)
        for s in samples {
            let t = try #require(s["deviceTime"] as? Int64), epoch = try #require(s["epochMs"] as? Int64)
            #expect(epoch == zero + t)
            #expect(epoch >= before - 1000 && epoch <= after + 1000, "an absolute time of this run")
        }
        let accel = try String(contentsOfFile: dir + "/split.accelerometer.csv", encoding: .utf8).components(separatedBy: "\r\n")
        #expect(accel[0] == "epoch (ms),elapsed (s),device time (ms),x (g),y (g),z (g),accuracy,missing before")
        let gyro = try String(contentsOfFile: dir + "/split.gyroscope.csv", encoding: .utf8).components(separatedBy: "\r\n")
        #expect(gyro[0] == "epoch (ms),elapsed (s),device time (ms),x (deg/s),y (deg/s),z (deg/s),accuracy,missing before")
        #expect(accel.filter { !$0.isEmpty }.count - 1 == samples.filter { $0["sensor"] as? String == "accelerometer" }.count)
        // The plot reads a recording with its metadata line.
        let plot = try await CLI.run(["wearable", "plot", dir + "/split.jsonl", "--no-png", "--format", "json"])
        #expect(plot.status == 0, "\(plot.stderr)")
    }

    /// A recording (from `sim wearable` with dropped notifications: gaps) replayed by `sim wearable --replay` and
    /// recorded again: the same samples, values, device times and gaps, and the same device (its metadata).
    @Test func aRecordingReplaysAsADevice() async throws {
        let dir = Scratch.directory
        let sim = try await RunningWearable.start(["--seed", "5", "--drop-notifications", "3,9"])
        let original = try await CLI.run(["wearable", "record", dir + "/orig", "--sensor", "accelerometer", "--sensor", "gameRotation",
                                          "--period", "40ms", "--duration", "1", "--device", sim.address, "--format", "json"])
        #expect(original.status == 0, "\(original.stderr)")
        #expect(await sim.quit() == 0)
        let replay = try await RunningWearable.start(["--replay", dir + "/orig.jsonl"])
        let again = try await CLI.run(["wearable", "record", dir + "/again", "--sensor", "accelerometer", "--sensor", "gameRotation",
                                       "--period", "40ms", "--duration", "3", "--device", replay.address, "--format", "json"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(await replay.quit() == 0)
        func samples(_ path: String) throws -> [String] {
            try Self.lines(path).filter { $0["type"] as? String == "sample" }.map { s in
                ["sensor", "deviceTime", "timestamp", "x", "y", "z", "w", "accuracy", "missingBefore"].map { "\(s[$0] ?? "-")" }.joined(separator: " ")
            }
        }
        let recorded = try samples(dir + "/orig.jsonl"), replayed = try samples(dir + "/again.jsonl")
        #expect(recorded.count >= 30 && recorded.contains { !$0.hasSuffix(" 0") }, "samples, and the dropped notifications' gaps")
        #expect(replayed == recorded)
        let metadata = try Self.lines(dir + "/again.jsonl").first?["metadata"] as? [String: Any]
        #expect((metadata?["deviceInformation"] as? [String: Any])?["productID"] as? Int == 0x4020)
    }

    /// A replay file that is not a recording, is cut short or is empty: one line, exit 65, before anything listens.
    @Test func aReplayOfWhatIsNotARecordingIsRefused() async throws {
        let dir = Scratch.directory
        try WearableOutputCLITests.recording(dir + "/good.jsonl", samples: 3)
        let good = try String(contentsOfFile: dir + "/good.jsonl", encoding: .utf8)
        try Data(good.dropLast(20).utf8).write(to: URL(fileURLWithPath: dir + "/cut.jsonl"))
        try Data().write(to: URL(fileURLWithPath: dir + "/empty.jsonl"))
        try Data(#"{"type":"event","event":"opened"}"#.utf8).write(to: URL(fileURLWithPath: dir + "/events.jsonl"))
        for (file, says) in [("/etc/passwd", "/etc/passwd:1: not a line of a wearable recording"),
                             (dir + "/cut.jsonl", "\(dir)/cut.jsonl:4: not a line of a wearable recording"),
                             (dir + "/empty.jsonl", "\(dir)/empty.jsonl holds no samples or gestures to replay"),
                             (dir + "/events.jsonl", "\(dir)/events.jsonl holds no samples or gestures to replay")] {
            let r = try await CLI.run(["sim", "wearable", "--replay", file], stdin: "quit\n", timeout: 30)
            #expect(r.status == 65 && r.stderrLines == ["tuneup: \(says)"] && r.stdout.isEmpty, "\(file): \(r.status) \(r.stderr)")
        }
        let missing = try await CLI.run(["sim", "wearable", "--replay", dir + "/none.jsonl"], stdin: "quit\n", timeout: 30)
        #expect(missing.status == 74 && missing.stderrLines.count == 1, "\(missing.stderr)")
        // The good one serves (and quits on stdin).
        let served = try await CLI.run(["sim", "wearable", "--replay", dir + "/good.jsonl"], stdin: "quit\n", timeout: 30)
        #expect(served.status == 0 && served.stdout.hasPrefix("tcp:127.0.0.1:"), "\(served.stderr)")
    }
}
