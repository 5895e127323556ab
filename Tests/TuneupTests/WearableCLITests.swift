import Foundation
import Glibc
import Spawn
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing

/// A long-running `tuneup sim wearable ...` with its stdin open for control lines.
final class RunningWearable: Sendable {
    let process: ChildProcess
    var output: Collector { process.output! }
    var errors: Collector { process.errors! }
    let address: String

    static func start(_ args: [String]) async throws -> RunningWearable {
        try await offThePool { try RunningWearable(args) }
    }

    private init(_ args: [String]) throws {
        process = try ChildProcess(CLI.binary.path, ["sim", "wearable"] + args, stdin: .pipe)
        guard let first = process.output!.linesBlocking(1).first else {
            process.terminate()
            throw CLIError("sim wearable printed no address; stderr: \(process.errors!.textBlocking(timeout: 5))")
        }
        address = first
    }

    func send(_ line: String) { process.write(line + "\n") }

    /// Sends `quit` and waits for the exit status.
    func quit() async -> Int32 {
        send("quit")
        return (try? await exitStatus(of: process)) ?? -1
    }
}

/// The SVG's panels (by sensor) and gesture marks, read with an XML parser.
final class SVGSummary: NSObject, XMLParserDelegate {
    var panels: [String] = []
    var gestureMarks: [String] = []
    var polylines = 0
    var texts: [String] = []
    private var inText = false

    static func parse(_ data: Data) throws -> SVGSummary {
        let summary = SVGSummary()
        let parser = XMLParser(data: data)
        parser.delegate = summary
        guard parser.parse() else { throw CLIError("the SVG does not parse: \(parser.parserError.map { "\($0)" } ?? "?")") }
        return summary
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        if name == "g", attributes["class"] == "panel", let sensor = attributes["data-sensor"] { panels.append(sensor) }
        if name == "line", attributes["class"] == "gesture", let g = attributes["data-gesture"] { gestureMarks.append(g) }
        if name == "polyline" { polylines += 1 }
        inText = name == "text"
        if inText { texts.append("") }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if inText, !texts.isEmpty { texts[texts.count - 1] += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) { inText = false }
}

@Suite("tuneup wearable and sim wearable", .serialized)
struct WearableCLITests {
    @Test func infoAsTextAndJSON() async throws {
        let text = try await CLI.run(["wearable", "info"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("0x4020") && text.stdout.contains("accelerometer, gyroscope, rotation, gameRotation"), "\(text.stdout)")
        let r = try await CLI.run(["wearable", "info", "--format", "json", "--device", "sim:wearable:5"])
        #expect(r.status == 0, "\(r.stderr)")
        let info = try json(r.stdout)
        #expect(info["device"] as? String == "sim:wearable:5")
        #expect(info["protocolVersion"] as? String == "1.2")
        #expect(info["productId"] as? Int == 0x4020)
        #expect(info["availableSensors"] as? [String] == ["accelerometer", "gyroscope", "rotation", "gameRotation"])
        #expect(info["availableGestures"] as? [String] == ["singleTap", "doubleTap", "headNod", "headShake"])
        #expect(info["transmissionPeriodMs"] as? Int == 40 && info["maxPayloadPerTransmissionPeriod"] as? Int == 60)
        #expect(info["maxActiveSensors"] as? Int == 3 && info["mtu"] as? Int == 247)
        let status = try #require(info["status"] as? [String: Any])
        #expect(status["pairingEnabled"] as? Bool == true && status["serviceSuspended"] as? Bool == false)
    }

    @Test func sensorsListAndAnAcceptedWrite() async throws {
        let list = try await CLI.run(["wearable", "sensors", "--format", "json"])
        #expect(list.status == 0, "\(list.stderr)")
        let listed = try json(list.stdout)
        let sensors = try #require(listed["sensors"] as? [[String: Any]])
        #expect(sensors.map { $0["sensor"] as? String } == ["accelerometer", "gyroscope", "rotation", "gameRotation"])
        #expect(sensors[1]["availablePeriodsMs"] as? [Int] == [80, 40, 20])
        #expect(sensors[0]["unit"] as? String == "g" && sensors[0]["minScaled"] as? Int == -16 && sensors[0]["sampleLength"] as? Int == 7)
        #expect(sensors.allSatisfy { $0["periodMs"] == nil }, "every connection starts with everything disabled")
        #expect(listed["written"] as? Bool == false)

        let write = try await CLI.run(["wearable", "sensors", "--enable", "accelerometer", "--enable", "gyro-scope", "--period", "20ms", "--format", "json"])
        #expect(write.status == 0, "\(write.stderr)")
        let written = try json(write.stdout)
        let after = try #require(written["sensors"] as? [[String: Any]])
        #expect(after.map { $0["periodMs"] as? Int } == [20, 20, nil, nil])
        #expect(written["samplePeriodMs"] as? Int == 20 && written["written"] as? Bool == true)
        let text = try await CLI.run(["wearable", "sensors", "--enable", "gameRotation", "--period", "40ms"])
        #expect(text.status == 0 && text.stdout.contains("accepted: gameRotation at 40 ms"), "\(text.stdout) \(text.stderr)")
    }

    /// Each rule: the library refuses what the device's information rules out (64) before sending, the device refuses
    /// the rest (65); one line on stderr names the rule.
    @Test(arguments: [
        (["--enable", "rotation", "--period", "320ms"], Int32(64), "sample period not offered"),
        (["--enable", "rotation", "--period", "320ms", "--no-check"], Int32(65), "sample period not offered"),
        (["--enable", "accelerometer", "--enable", "gyroscope", "--enable", "rotation", "--enable", "gameRotation", "--period", "40ms"],
         Int32(64), "too many sensors"),
        (["--enable", "accelerometer", "--enable", "gyroscope", "--enable", "rotation", "--enable", "gameRotation", "--period", "40ms", "--no-check"],
         Int32(65), "too many sensors"),
        (["--enable", "accelerometer", "--enable", "gyroscope", "--enable", "rotation", "--period", "20ms"], Int32(65), "over the payload budget"),
        (["--enable", "magnetometer"], Int32(64), "a sensor the device lacks"),
        (["--enable", "magnetometer", "--no-check"], Int32(65), "a sensor the device lacks"),
    ])
    func aConfigurationTheDeviceCannotHonourNamesTheRule(args: [String], status: Int32, rule: String) async throws {
        let r = try await CLI.run(["wearable", "sensors"] + args)
        #expect(r.status == status, "\(args): \(r.stdout) \(r.stderr)")
        #expect(r.stderrLines.count == 1, "\(r.stderr)")
        #expect(r.stderr.hasPrefix("tuneup: ") && r.stderr.contains("rule: " + rule), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func gesturesListAndWrite() async throws {
        let r = try await CLI.run(["wearable", "gestures", "--enable", "head-nod", "--enable", "doubleTap", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let gestures = try #require(try json(r.stdout)["gestures"] as? [[String: Any]])
        #expect(gestures.map { $0["gesture"] as? String } == ["singleTap", "doubleTap", "headNod", "headShake"])
        #expect(gestures.map { $0["enabled"] as? Bool } == [false, true, true, false])
        #expect(gestures.map { $0["id"] as? Int } == [0x80, 0x81, 0x82, 0x83])
        let all = try await CLI.run(["wearable", "gestures", "--all"])
        #expect(all.status == 0 && all.stdout.split(separator: "\n").allSatisfy { $0.hasSuffix(" on") }, "\(all.stdout)")
    }

    @Test(arguments: [
        (["wearable", "sensors", "--period", "30ms"], "not a sample period"),
        (["wearable", "sensors", "--enable", "thermometer"], "unknown sensor 'thermometer'"),
        (["wearable", "gestures", "--enable", "wink"], "unknown gesture 'wink'"),
        (["wearable", "info", "--device", "sim:wearable:x"], "bad simulated wearable"),
        (["wearable", "stream", "--duration", "forever"], "--duration"),
        (["sim", "wearable", "--motion", "nod:20"], "--motion"),
        (["sim", "wearable", "--listen", "udp:1"], "--listen"),
        (["sim", "wearable", "--drop-notifications", "1,x"], "--drop-notifications"),
        (["wearable", "plot", "/nonexistent/recording.jsonl"], "cannot read the recording"),
    ])
    func badInputIsOneLineAndAnExitCode(args: [String], says: String) async throws {
        let r = try await CLI.run(args)
        #expect(r.status == 64 || (args[1] == "plot" && r.status == 74), "\(args): \(r.status) \(r.stderr)")
        #expect(r.stderrLines.count == 1 && r.stderr.contains(says), "\(r.stderr)")
    }

    @Test func aDeviceThatIsNotThereFailsToOpen() async throws {
        let r = try await CLI.run(["wearable", "stream", "--device", "tcp:127.0.0.1:1", "--duration", "1s", "--format", "json"])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines.count == 1)
        let lines = try jsonLines(r.stdout)
        #expect(lines.count == 1 && lines[0]["event"] as? String == "failedToOpen" && lines[0]["code"] as? String == "connection-failed", "\(r.stdout)")
    }

    /// Over TCP from 'sim wearable' with a dropped notification: events, samples, the gap counted in the summary.
    @Test func streamFromTheSimulatorOverTCPCountsTheInjectedGap() async throws {
        let sim = try await RunningWearable.start(["--drop-notifications", "5"])
        #expect(sim.address.wholeMatch(of: /tcp:127\.0\.0\.1:\d+/) != nil, "\(sim.address)")
        let r = try await CLI.run(["wearable", "stream", "--device", sim.address, "--sensor", "accelerometer", "--period", "20ms",
                                   "--duration", "1s", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = try jsonLines(r.stdout)
        #expect(lines.first?["event"] as? String == "opened" && lines.first?["device"] as? String == sim.address)
        let configured = try #require(lines.first { $0["event"] as? String == "configured" })
        #expect(configured["periods"] as? [String: Int] == ["accelerometer": 20])
        let samples = lines.filter { $0["type"] as? String == "sample" }
        #expect(samples.count >= 30, "\(samples.count) samples in 1 s at 20 ms")
        for key in ["sensor", "timestamp", "deviceTime", "hostTime", "x", "y", "z", "accuracy", "missingBefore"] {
            #expect(samples.first?[key] != nil, "missing \(key)")
        }
        let times = samples.compactMap { $0["deviceTime"] as? Int }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 })
        // Notification 5 held two samples: one gap of two.
        #expect(samples.filter { ($0["missingBefore"] as? Int ?? 0) > 0 }.map { $0["missingBefore"] as? Int } == [2])
        #expect(lines[lines.count - 2]["event"] as? String == "closed" && lines[lines.count - 2]["error"] == nil)
        let summary = try #require(lines.last)
        #expect(summary["type"] as? String == "summary")
        let counts = try #require((summary["counts"] as? [String: [String: Int]])?["accelerometer"])
        #expect(counts["gaps"] == 1 && counts["missingSamples"] == 2 && counts["outOfOrder"] == 0 && counts["samples"] == samples.count)
        #expect(await sim.quit() == 0)
    }

    /// Stopping at the duration: what the session received before it closed is written before the summary, so the
    /// summary counts exactly the sample lines written, run after run at 20 ms (a notification in flight at the stop was
    /// counted and never written, about one run in twenty).
    @Test func theSummaryCountsExactlyTheSamplesWritten() async throws {
        for run in 0..<6 {
            let r = try await CLI.run(["wearable", "stream", "--device", "sim:wearable:\(run)", "--period", "20ms", "--duration", "1s",
                                       "--format", "json"])
            #expect(r.status == 0, "\(r.stderr)")
            let lines = try jsonLines(r.stdout)
            // Values as a person would write them: no float noise such as 0.045916042000000004.
            let noisy = r.stdout.split(separator: "\n").filter { $0.contains("\"sample\"") && $0.contains(/\d\.\d{10,}/) }
            #expect(noisy.isEmpty, "run \(run): \(noisy.prefix(2))")
            let counts = try #require(lines.last?["counts"] as? [String: [String: Int]], "run \(run): \(lines.last ?? [:])")
            for (sensor, count) in counts {
                let written = lines.filter { $0["type"] as? String == "sample" && $0["sensor"] as? String == sensor }.count
                #expect(count["samples"] == written, "run \(run), \(sensor): summary \(count["samples"] ?? -1), written \(written)")
            }
        }
    }

    /// A configuration the device (or the library, from the device's information) refuses: one error line, and no
    /// "opened" event on stdout for a stream that never ran.
    @Test func aRefusedConfigurationPrintsNoOpenedEvent() async throws {
        for extra in [[], ["--no-check"]] {
            let r = try await CLI.run(["wearable", "stream", "--device", "sim:wearable", "--sensor", "gyroscope", "--period", "320ms",
                                       "--duration", "1s", "--format", "json"] + extra)
            #expect(r.status != 0 && r.stderrLines.count == 1, "\(extra): \(r.stderr)")
            #expect(!r.stdout.contains("\"opened\""), "\(extra): \(r.stdout)")
        }
    }

    /// Gestures alone (--sensor none), and a gesture named by its id.
    @Test func gesturesAloneAndByID() async throws {
        let r = try await CLI.run(["wearable", "stream", "--device", "sim:wearable", "--sensor", "none", "--gesture", "0x81",
                                   "--duration", "1s", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = try jsonLines(r.stdout)
        let configured = try #require(lines.first { $0["event"] as? String == "configured" })
        #expect((configured["periods"] as? [String: Int])?.isEmpty != false, "no sensor: \(configured)")
        #expect(configured["gestures"] as? [String] == ["doubleTap"], "\(configured)")
        #expect(!lines.contains { $0["type"] as? String == "sample" })
    }

    /// The link drops mid-stream with reconnecting off (--reconnect-timeout 0): the stream reports the closed event with
    /// its error, its summary, one line, exit 69.
    @Test func aLinkDroppedMidStreamEndsWithItsError() async throws {
        let sim = try await RunningWearable.start([])
        let process = try ChildProcess(CLI.binary.path, ["wearable", "stream", "--device", sim.address, "--duration", "60s", "--format", "json",
                                                         "--reconnect-timeout", "0"])
        let (output, errors) = (process.output!, process.errors!)
        let first = await output.lines(5)
        #expect(first.count >= 5, "\(first)")
        sim.send("drop-link")
        let status = try await exitStatus(of: process)
        #expect(status == 69)
        let lines = try jsonLines(await output.text())
        let closed = try #require(lines.first { $0["event"] as? String == "closed" })
        #expect(closed["code"] as? String == "disconnected" && closed["error"] != nil)
        #expect(lines.last?["type"] as? String == "summary")
        let err = await errors.text()
        #expect(err.split(separator: "\n").count == 1 && err.contains("lost"), "\(err)")
        // The device is still there: a new connection starts with everything disabled.
        let again = try await CLI.run(["wearable", "sensors", "--device", sim.address, "--format", "json"])
        #expect(again.status == 0)
        #expect(try (json(again.stdout)["sensors"] as? [[String: Any]])?.allSatisfy { $0["periodMs"] == nil } == true)
        #expect(await sim.quit() == 0)
    }

    /// record → plot: both files, and an SVG with a panel per sensor, axes with units and the gestures marked.
    @Test func recordThenPlotMakesAnSVGWithPanelsAndGestureMarks() async throws {
        // The head moves from the simulator's start on: 5 s of stillness first, so that the recording, however late
        // a loaded machine starts it, is there for the nod (5.2-5.8 s) and the shake (6.0-6.6 s).
        let sim = try await RunningWearable.start(["--motion", "still:5,nod:20:2:0.6,still:0.2,shake:25:2:0.6,still:5"])
        let directory = Scratch.directory
        let base = directory + "/nods"
        let r = try await CLI.run(["wearable", "record", base, "--device", sim.address, "--sensor", "accelerometer", "--sensor", "gyroscope",
                                   "--sensor", "gameRotation", "--period", "40ms", "--duration", "7s", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let written = try json(r.stdout)
        #expect(written["jsonl"] as? String == base + ".jsonl" && written["csv"] as? String == base + ".csv")
        #expect((written["gestures"] as? Int ?? 0) >= 2, "a nod and a shake: \(r.stdout)")
        let csvText = try String(contentsOfFile: base + ".csv", encoding: .utf8)
        #expect(csvText.hasSuffix("\r\n") && !csvText.replacingOccurrences(of: "\r\n", with: "").contains("\n"), "RFC 4180 rows: CRLF")
        let csv = csvText.split(whereSeparator: \.isNewline)
        #expect(csv.first?.hasPrefix("kind,sensor_or_gesture,timestamp,device_time_ms") == true)
        #expect(csv.contains { $0.hasPrefix("gesture,headNod,") } && csv.contains { $0.hasPrefix("gesture,headShake,") })
        #expect(csv.filter { $0.hasPrefix("sample,gameRotation,") }.count == (written["samples"] as? Int ?? 0) / 3)
        #expect(await sim.quit() == 0)

        let plot = try await CLI.run(["wearable", "plot", base + ".jsonl", "--format", "json"])
        #expect(plot.status == 0, "\(plot.stderr)")
        let made = try json(plot.stdout)
        #expect(made["svg"] as? String == base + ".svg")
        #expect(made["panels"] as? [String] == ["accelerometer", "gyroscope", "gameRotation"])
        let svg = try SVGSummary.parse(try Data(contentsOf: URL(fileURLWithPath: base + ".svg")))
        #expect(svg.panels == ["accelerometer", "gyroscope", "gameRotation"])
        #expect(svg.gestureMarks.filter { $0 == "headNod" }.count == 3 && svg.gestureMarks.filter { $0 == "headShake" }.count == 3,
                "each gesture marked in every panel: \(svg.gestureMarks)")
        #expect(svg.polylines >= 3 + 3 + 4)
        #expect(svg.texts.contains("accelerometer (g)") && svg.texts.contains("gyroscope (°/s)") && svg.texts.contains("device time (s)"))
        if let png = made["png"] as? String {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: png))
            #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
        }

        let notARecording = directory + "/bad.jsonl"
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: notARecording))
        let bad = try await CLI.run(["wearable", "plot", notARecording])
        #expect(bad.status == 65 && bad.stderrLines.count == 1 && bad.stderr.contains("bad.jsonl:1"), "\(bad.stderr)")
    }

    /// Ctrl-C stops a recording without a duration: exit 0, both files written with what arrived.
    @Test func ctrlCStopsARecordingAndItsFilesAreWritten() async throws {
        let base = Scratch.directory + "/interrupted"
        let process = try ChildProcess(CLI.binary.path, ["wearable", "record", base, "--sensor", "gyroscope", "--period", "40ms"],
                                       stdout: .null)
        let errors = process.errors!
        let started = await errors.lines(1)
        #expect(started.first?.hasPrefix("recording to \(base).jsonl") == true, "\(started)")
        process.interrupt()
        let status = try await exitStatus(of: process)
        let stderr = await errors.text()
        #expect(status == 0, "\(stderr)")
        let lines = try jsonLines(try String(contentsOfFile: base + ".jsonl", encoding: .utf8))
        // The metadata first (without its time zero when no sample came before the Ctrl-C), then the stream's lines.
        #expect(lines.first?["type"] as? String == "metadata" && lines.dropFirst().first?["event"] as? String == "opened")
        #expect(lines.last?["type"] as? String == "summary")
        let csv = try String(contentsOfFile: base + ".csv", encoding: .utf8)
        #expect(csv.hasPrefix("kind,sensor_or_gesture,"))
    }

    /// A recording is written as it goes: killed outright (SIGKILL), it keeps what it had received until about a second
    /// before, every line whole.
    @Test func aKilledRecordingKeepsWhatItWrote() async throws {
        let base = Scratch.directory + "/killed"
        let process = try ChildProcess(CLI.binary.path, ["wearable", "record", base, "--sensor", "accelerometer", "--period", "20ms",
                                                         "--duration", "60s"], stdout: .null)
        // Samples reach the file while the recording runs (before, nothing was written until its end).
        func written() async throws -> [[String: Any]] {
            let text = try await offThePool { (try? String(contentsOfFile: base + ".jsonl", encoding: .utf8)) ?? "" }
            return text.split(separator: "\n").compactMap { try? json(String($0)) }
        }
        // The writer writes the JSON Lines file, then the CSV: both are waited for (killed in between, the CSV would
        // miss that batch, as documented, and hold no sample yet).
        func csvHasSamples() async throws -> Bool {
            try await offThePool { (try? String(contentsOfFile: base + ".csv", encoding: .utf8))?.contains("sample,accelerometer,") ?? false }
        }
        try await waitUntil("samples in \(base).jsonl and .csv", within: 60) {
            guard try await written().filter({ $0["type"] as? String == "sample" }).count >= 20 else { return false }
            return try await csvHasSamples()
        }
        process.signal(SIGKILL)
        _ = try await exitStatus(of: process)
        let text = try await offThePool { try String(contentsOfFile: base + ".jsonl", encoding: .utf8) }
        #expect(text.hasSuffix("\n"), "whole lines only")
        let lines = text.split(separator: "\n")
        #expect(lines.allSatisfy { (try? json(String($0))) != nil }, "every line is JSON")
        #expect(lines.filter { $0.contains("\"sample\"") }.count >= 20)
        let csv = try await offThePool { try String(contentsOfFile: base + ".csv", encoding: .utf8) }
        #expect(csv.hasPrefix("kind,sensor_or_gesture,") && csv.contains("sample,accelerometer,"))
    }

    @Test func simWearableOnAPseudoTerminal() async throws {
        let sim = try await RunningWearable.start(["--pty", "--seed", "3"])
        #expect(sim.address.hasPrefix("serial:/dev/pts/"), "\(sim.address)")
        let r = try await CLI.run(["wearable", "info", "--device", sim.address, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try json(r.stdout)["productId"] as? Int == 0x4020)
        #expect(await sim.quit() == 0)
    }
}
