import Foundation
import Support
import TestSupport
import Testing
import Wearable
import WearableRecording

/// The plot of a recording (`tuneup wearable plot`), laid out from JSON Lines without files.
@Suite struct PlotTests {
    static func sample(_ sensor: String, _ t: Int, x: Double, y: Double = 0, z: Double = 0, w: Double? = nil, missing: Int = 0) -> String {
        #"{"type":"sample","sensor":"\#(sensor)","timestamp":\#(t),"deviceTime":\#(t),"x":\#(x),"y":\#(y),"z":\#(z)"#
            + (w.map { #","w":\#($0)"# } ?? "") + (missing > 0 ? #","missingBefore":\#(missing)"# : "") + "}"
    }

    /// Panels in the sensors' order with their units, a gap and a reconnect each break the lines, every gesture is
    /// marked in every panel, and names from the file are escaped in the SVG.
    @Test func panelsGapsReconnectsAndGestures() throws {
        let text = [
            Self.sample("gyroscope", 0, x: 1), Self.sample("accelerometer", 0, x: 0.5),
            Self.sample("accelerometer", 20, x: 0.6), Self.sample("accelerometer", 60, x: 0.7, missing: 1),
            #"{"type":"gesture","gesture":"headNod","timestamp":70,"deviceTime":70}"#,
            #"{"type":"event","event":"reconnected","gapSeconds":0.5}"#,
            Self.sample("accelerometer", 600, x: 0.8), Self.sample("gyroscope", 600, x: 2),
            #"{"type":"gesture","gesture":"a<b\"c","timestamp":650,"deviceTime":650}"#,
            "",
        ].joined(separator: "\n")
        let plot = try WearablePlot(jsonLines: text, name: "r.jsonl")
        #expect(plot.panels.map(\.name) == ["accelerometer", "gyroscope"])
        #expect(plot.panels.map(\.unit) == ["g", "°/s"])
        #expect(plot.sampleCount == 6 && plot.duration == 0.65)
        let accelX = try #require(plot.panels[0].series.first { $0.name == "x" })
        // Broken before the sample after the gap and before the first after the reconnect.
        #expect(accelX.runs.map(\.count) == [2, 1, 1])
        #expect(plot.panels[0].gaps == [0.06] && plot.panels[1].gaps.isEmpty)
        #expect(try #require(plot.panels[1].series.first).runs.map(\.count) == [1, 1])
        #expect(plot.gestures.map(\.name) == ["headNod", "a<b\"c"])

        let svg = plot.svg()
        #expect(svg.components(separatedBy: #"class="gesture" data-gesture="headNod""#).count - 1 == 2, "marked in both panels")
        #expect(svg.contains(#"data-gesture="a&lt;b&quot;c""#) && !svg.contains("a<b"))
        #expect(svg.contains("Wearable recording: 2 sensors, 6 samples, 2 gestures, 0.7 s"))
        #expect(svg.contains(">accelerometer (g)</text>") && svg.contains(">gyroscope (°/s)</text>"))
    }

    /// A recording made before the angles were recorded (quaternions alone) gets an orientation panel computed from
    /// them; one without quaternions gets none.
    @Test func orientationFromQuaternions() throws {
        let h = 0.5.squareRoot()
        let text = [Self.sample("rotation", 0, x: 0, w: 1), Self.sample("rotation", 20, x: 0, z: h, w: h)].joined(separator: "\n")
        let plot = try WearablePlot(jsonLines: text, name: "old.jsonl", orientation: true)
        #expect(plot.panels.map(\.name) == ["rotation", "rotation orientation"])
        let yaw = try #require(plot.panels[1].series.first { $0.name == "yaw" }?.runs.flatMap { $0 })
        #expect(yaw.count == 2 && abs(yaw[0].1) < 1e-9 && abs(yaw[1].1 - 90) < 1e-6, "\(yaw)")
        #expect(plot.svg().contains("rotation yaw, pitch, roll (°)") && plot.svg().contains(#"data-kind="orientation""#))
        let accel = try WearablePlot(jsonLines: Self.sample("accelerometer", 0, x: 1), name: "a.jsonl", orientation: true)
        #expect(accel.panels.map(\.name) == ["accelerometer"])
    }

    @Test func whatIsNotARecordingOrHoldsNoSamplesIsRefused() {
        let bad = #expect(throws: RecordingError.self) { try WearablePlot(jsonLines: Self.sample("accelerometer", 0, x: 1) + "\nhello\n", name: "x.jsonl") }
        #expect(bad?.code == .notARecording && bad?.message == "x.jsonl:2: not a line of a wearable recording" && bad?.category == .device)
        let empty = #expect(throws: RecordingError.self) { try WearablePlot(jsonLines: #"{"type":"event","event":"opened"}"#, name: "e.jsonl") }
        #expect(empty?.code == .noSamples && empty?.message == "e.jsonl holds no samples to plot")
    }

    /// `plot` reads the file a chunk at a time (a long recording is never held whole): lines cut anywhere between
    /// chunks (CRLF too) plot exactly as the whole text does, and a refusal names the same line.
    @Test func aFileReadInChunksPlotsAsTheWholeText() async throws {
        let dir = try TemporaryDirectory.make("plot-chunks")
        let text = [
            #"{"type":"event","event":"opened"}"#,
            // A blank line of a CRLF file ("\r") is a blank line (issue 31 §5: without the trimming of its CR it was
            // refused as not a line of a recording, and that survived the suite).
            Self.sample("accelerometer", 0, x: 0.5), "", "\r", Self.sample("gyroscope", 0, x: 1) + "\r",
            Self.sample("accelerometer", 20, x: 0.6), Self.sample("accelerometer", 60, x: 0.7, missing: 1),
            #"{"type":"gesture","gesture":"headNod","timestamp":70,"deviceTime":70}"#, Self.sample("gyroscope", 80, x: 2),
        ].joined(separator: "\n")
        let whole = try WearablePlot(jsonLines: text, name: "r.jsonl")
        // Per file (without, with a last newline, with a bad line) and chunk size: the samples and SVG, or the refusal.
        let read = try await offThePool { () throws -> [[Result<String, RecordingError>]] in
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            return try [text, text + "\n", text + "\nhello\n", "/"].enumerated().map { k, body in
                let path = dir + "/r\(k).jsonl"
                if body != "/" { try Data(body.utf8).write(to: URL(fileURLWithPath: path)) }
                return [1, 3, 7, 1 << 20].map { chunk in
                    Result { () throws(RecordingError) in
                        let plot = try WearablePlot(file: path, name: "r.jsonl", chunkSize: chunk)
                        return "\(plot.sampleCount) \(plot.svg())"
                    }
                }
            }
        }
        for k in 0..<2 {
            #expect(try read[k].map { try $0.get() } == Array(repeating: "5 \(whole.svg())", count: 4))
        }
        for result in read[2] {
            guard case let .failure(refused) = result else { Issue.record("a bad line was read"); continue }
            #expect(refused.code == .notARecording && refused.message == "r.jsonl:10: not a line of a wearable recording")
        }
        for result in read[3] {
            guard case let .failure(missing) = result else { Issue.record("a missing file was read"); continue }
            #expect(missing.code == .unreadable)
        }
    }

    /// `make`: the recording found by its base name, the SVG written next to it, what was made reported; an
    /// unreadable recording is a local file failure.
    @Test func makeReadsByBaseNameAndWritesTheSVG() async throws {
        let dir = try TemporaryDirectory.make("plot-tests")
        let base = dir + "/walk"
        try await offThePool {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try SafeOutput.write(Self.sample("accelerometer", 0, x: 1) + "\n" + Self.sample("accelerometer", 1000, x: 2) + "\n", to: base + ".jsonl")
        }
        let result = try await WearablePlot.make(recording: base, output: nil, png: false, orientation: true)
        #expect(result.input == base + ".jsonl" && result.noOrientation)
        #expect(result.made.svg == base + ".svg" && result.made.png == nil && result.made.samples == 2 && result.made.durationSeconds == 1)
        #expect(WearablePlot.text(result.made) == "wrote \(base).svg: 1 panel (accelerometer), 2 samples, 0 gestures over 1.0 s")
        let svg = try await offThePool { try String(contentsOfFile: base + ".svg", encoding: .utf8) }
        #expect(svg == result.plot.svg())
        let missing = await #expect(throws: RecordingError.self) {
            try await WearablePlot.make(recording: dir + "/none", output: nil, png: false, orientation: false)
        }
        #expect(missing?.code == .unreadable && missing?.category == .localFile)
        try await offThePool { try FileManager.default.removeItem(atPath: dir) }
    }

    @Test func namesUnitsAndTheSummary() {
        #expect(WearableText.sensor(named: "game-rotation") == .gameRotation && WearableText.sensor(named: "0") == .accelerometer)
        #expect(WearableText.sensor(named: "elbow") == nil)
        #expect(WearableText.gesture(named: "double_tap") == .doubleTap && WearableText.gesture(named: "0x81") == .doubleTap)
        var summary = WearableLine(type: "summary")
        summary.counts = ["gyroscope": .init(samples: 1, gaps: 0, missingSamples: 0, outOfOrder: 0),
                          "accelerometer": .init(samples: 10, gaps: 2, missingSamples: 3, outOfOrder: 1)]
        summary.gestureCount = 1
        summary.malformedNotifications = 2
        summary.malformedByCode = ["truncated": 2]
        summary.reconnects = 1
        summary.linkDownSeconds = 0.5
        #expect(WearableText.summary(summary) == """
            accelerometer: 10 samples, 2 gaps (3 missing), 1 out of order
            gyroscope: 1 sample, 0 gaps (0 missing), 0 out of order
            gestures: 1; malformed notifications: 2 (truncated 2)
            reconnects: 1 (link down 0.50 s in all)
            """)
    }

    /// Issue 30 §23: a recording across a device restart (its clock from 0 again) drew the two stretches over each
    /// other. After the reconnect the line breaks and the stretch is laid out in host time.
    @Test func aDeviceRestartIsLaidOutInHostTime() throws {
        func lines(hostTimes: Bool) -> String {
            func sample(_ t: Int, host: Double, x: Double) -> String {
                #"{"type":"sample","sensor":"accelerometer","timestamp":\#(t),"deviceTime":\#(t),"#
                    + (hostTimes ? #""hostTime":\#(host),"# : "") + #""x":\#(x),"y":0,"z":1}"#
            }
            return [
                sample(7000, host: 0.05, x: 1), sample(7020, host: 0.07, x: 1), sample(9000, host: 2.05, x: 1),
                #"{"type":"event","event":"reconnected","gapSeconds":1.5,"hostTime":3.5}"#,
                sample(20, host: 3.6, x: 2), sample(40, host: 3.62, x: 2),
            ].joined(separator: "\n")
        }
        let plot = try WearablePlot(jsonLines: lines(hostTimes: true), name: "restart.jsonl")
        let x = try #require(plot.panels.first?.series.first { $0.name == "x" })
        #expect(x.runs.map { $0.map(\.0) } == [[0, 0.02, 2.0], [3.55, 3.57]], "\(x.runs)")
        #expect(plot.duration == 3.57)
        // Without host times (older recordings), the stretch follows the one before it and its gap.
        let laidOut = try #require(try WearablePlot(jsonLines: lines(hostTimes: false), name: "old.jsonl").panels.first?.series.first { $0.name == "x" })
        #expect(laidOut.runs.map { $0.map(\.0) } == [[0, 0.02, 2.0], [3.5, 3.52]], "\(laidOut.runs)")
    }

    /// Issue 30 §25: the title counted the orientation panel as a sensor.
    @Test func theTitleCountsSensorsNotPanels() throws {
        let text = [Self.sample("gameRotation", 0, x: 0, w: 1), Self.sample("gameRotation", 20, x: 0, w: 1)].joined(separator: "\n")
        let plot = try WearablePlot(jsonLines: text, name: "r.jsonl", orientation: true)
        #expect(plot.panels.count == 2)
        #expect(plot.svg().contains("Wearable recording: 1 sensor, 2 samples, 0 gestures"))
    }
}
