import Foundation
import Glibc
import Spawn
import Testing

/// `wearable stream` and `record` survive a lost link (docs/wearable.md §7.1): against `sim wearable`'s `drop-link`
/// and a simulator killed and started again on the same port. Every wait is on a condition (lines arriving).
@Suite(.serialized) struct WearableReconnectCLITests {
    /// The JSON lines `collector` has printed so far (whole lines only).
    static func printed(_ collector: Collector) throws -> [[String: Any]] {
        var text = collector.text
        if let end = text.lastIndex(of: "\n") { text = String(text[...end]) } else { text = "" }
        return try jsonLines(text)
    }

    /// Waits (checking every 20 ms, at most `seconds`) until the printed lines satisfy `done`; returns them.
    static func waitFor(_ collector: Collector, seconds: Double = 60, _ what: String,
                        _ done: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            let lines = try printed(collector)
            if done(lines) { return lines }
            if ContinuousClock.now > deadline { throw CLIError("gave up waiting for \(what); printed: \(lines.suffix(5))") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    static func events(_ lines: [[String: Any]], _ name: String) -> [[String: Any]] {
        lines.filter { $0["type"] as? String == "event" && $0["event"] as? String == name }
    }

    static func samplesAfterLast(_ event: String, _ lines: [[String: Any]]) -> [[String: Any]] {
        guard let at = lines.lastIndex(where: { $0["event"] as? String == event }) else { return [] }
        return lines[(at + 1)...].filter { $0["type"] as? String == "sample" }
    }

    /// drop-link, then the simulator killed (SIGKILL) and started again on the same port: the stream goes on after
    /// each, the gap marked with its length, the first sample after it not counted as a sensor gap, the summary
    /// counting both reconnects; Ctrl-C then stops it with exit 0.
    @Test func streamSurvivesADroppedLinkAndARestartedSimulator() async throws {
        let sim = try await RunningWearable.start([])
        let port = try #require(sim.address.split(separator: ":").last.map(String.init))
        let stream = try ChildProcess(CLI.binary.path, ["wearable", "stream", "--device", sim.address, "--sensor", "accelerometer",
                                                        "--period", "20ms", "--format", "json"], environment: ["TUNEUP_DEVICE": nil])
        let out = stream.output!
        _ = try await Self.waitFor(out, "samples") { $0.filter { $0["type"] as? String == "sample" }.count >= 10 }

        sim.send("drop-link")
        var lines = try await Self.waitFor(out, "samples after the first reconnect") {
            Self.events($0, "reconnected").count == 1 && Self.samplesAfterLast("reconnected", $0).count >= 5
        }
        #expect(Self.events(lines, "linkLost").count == 1)

        // The simulator killed outright, then a new one on the same port.
        sim.process.signal(SIGKILL)
        _ = await sim.process.exited()
        _ = try await Self.waitFor(out, "the second loss") { Self.events($0, "linkLost").count == 2 }
        let again = try await RunningWearable.start(["--listen", "tcp:127.0.0.1:\(port)"])
        #expect(again.address == sim.address)
        lines = try await Self.waitFor(out, "samples after the second reconnect") {
            Self.events($0, "reconnected").count == 2 && Self.samplesAfterLast("reconnected", $0).count >= 5
        }

        stream.interrupt()
        #expect(try await exitStatus(of: stream) == 0, "\(stream.errors!.text)")
        lines = try jsonLines(await out.finishedText())
        let reconnected = Self.events(lines, "reconnected")
        #expect(reconnected.count == 2)
        for r in reconnected {
            let gap = try #require(r["gapSeconds"] as? Double)
            #expect(gap > 0 && gap < 30, "\(r)")
        }
        #expect(reconnected.map { $0["reconnects"] as? Int } == [1, 2])
        // The order: loss, reconnect, samples; the first sample after each reconnect has no gap of its own.
        for (k, lost) in lines.indices.filter({ lines[$0]["event"] as? String == "linkLost" }).enumerated() {
            let back = try #require(lines.indices.first { $0 > lost && lines[$0]["event"] as? String == "reconnected" }, "reconnect \(k)")
            let first = try #require(lines[back...].first { $0["type"] as? String == "sample" })
            #expect(first["missingBefore"] as? Int == 0, "\(first)")
        }
        let summary = try #require(lines.last)
        #expect(summary["type"] as? String == "summary" && summary["reconnects"] as? Int == 2, "\(summary)")
        #expect((summary["linkDownSeconds"] as? Double ?? 0) > 0)
        let counts = try #require((summary["counts"] as? [String: [String: Int]])?["accelerometer"])
        #expect(counts["samples"] == lines.filter { $0["type"] as? String == "sample" }.count)
        #expect(counts["gaps"] == 0, "the link's gaps are the reconnects', not sensor gaps: \(counts)")
        #expect(await again.quit() == 0)
    }

    /// record: the gap marked in the JSON Lines and the CSV (gap_s), plot draws it, replay takes the recording.
    @Test func recordMarksTheGapInBothFilesAndPlotsIt() async throws {
        let sim = try await RunningWearable.start([])
        let base = Scratch.directory + "/reconnect"
        let record = try ChildProcess(CLI.binary.path, ["wearable", "record", base, "--device", sim.address, "--sensor", "accelerometer",
                                                        "--period", "20ms", "--format", "json"], environment: ["TUNEUP_DEVICE": nil])
        // The recording says where it writes on stderr once configured; its samples are in the file within a second.
        let jsonl = base + ".jsonl"
        func written() async throws -> [[String: Any]] {
            let text = try await offThePool { try? String(contentsOfFile: jsonl, encoding: .utf8) }
            guard let text, let end = text.lastIndex(of: "\n") else { return [] }
            return try jsonLines(String(text[...end]))
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while try await written().filter({ $0["type"] as? String == "sample" }).count < 10 {
            guard ContinuousClock.now < deadline else { throw CLIError("no samples written") }
            try await Task.sleep(for: .milliseconds(20))
        }
        sim.send("drop-link")
        while try await Self.samplesAfterLast("reconnected", written()).count < 5 {
            guard ContinuousClock.now < deadline else { throw CLIError("no samples after the reconnect") }
            try await Task.sleep(for: .milliseconds(20))
        }
        record.interrupt()
        #expect(try await exitStatus(of: record) == 0, "\(record.errors!.text)")
        let lines = try await written()
        let back = try #require(Self.events(lines, "reconnected").first)
        #expect((back["gapSeconds"] as? Double ?? 0) > 0 && back["attempts"] as? Int ?? 0 >= 1)
        #expect(lines.last?["type"] as? String == "summary" && lines.last?["reconnects"] as? Int == 1)
        let csv = try await offThePool { try String(contentsOfFile: base + ".csv", encoding: .utf8) }.components(separatedBy: "\r\n")
        #expect(csv[0].hasSuffix(",epoch_ms,gap_s"))
        let marks = csv.filter { $0.hasPrefix("reconnected,") }
        #expect(marks.count == 1 && (Double(marks[0].split(separator: ",", omittingEmptySubsequences: false).last ?? "") ?? 0) > 0, "\(marks)")
        // Plot and replay read it (the event lines are part of the format).
        let plot = try await CLI.run(["wearable", "plot", jsonl, "--output", base + ".svg", "--no-png"])
        #expect(plot.status == 0, "\(plot.stderr)")
        let svg = try SVGSummary.parse(await offThePool { try Data(contentsOf: URL(fileURLWithPath: base + ".svg")) })
        #expect(svg.panels.contains("accelerometer"))
        #expect(await sim.quit() == 0)
    }

    /// With a limit the stream gives up once it has passed: the closed event with disconnected, the summary, exit 69.
    @Test func aReconnectTimeoutGivesUp() async throws {
        let sim = try await RunningWearable.start([])
        let stream = try ChildProcess(CLI.binary.path, ["wearable", "stream", "--device", sim.address, "--reconnect-timeout", "500ms",
                                                        "--format", "json"], environment: ["TUNEUP_DEVICE": nil])
        _ = try await Self.waitFor(stream.output!, "samples") { $0.contains { $0["type"] as? String == "sample" } }
        #expect(await sim.quit() == 0)  // gone for good
        #expect(try await exitStatus(of: stream) == 69)
        let lines = try jsonLines(await stream.output!.finishedText())
        let closed = try #require(Self.events(lines, "closed").first)
        #expect(closed["code"] as? String == "disconnected" && (closed["error"] as? String ?? "").contains("not back within"), "\(closed)")
        #expect(lines.last?["type"] as? String == "summary" && lines.last?["reconnects"] as? Int == 0)
        let err = await stream.errors!.finishedText()
        #expect(err.split(separator: "\n").count == 1, "\(err)")
    }

    /// `wearable` commands take the device from $TUNEUP_DEVICE, as the headset commands do; --device wins.
    @Test func wearableCommandsHonourTUNEUP_DEVICE() async throws {
        let sim = try await RunningWearable.start([])
        let state = Scratch.directory
        let r = try await HardeningTests.run(["wearable", "info", "--format", "json"], state: state, environment: ["TUNEUP_DEVICE": sim.address])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try json(r.stdout)["device"] as? String == sim.address)
        let given = try await HardeningTests.run(["wearable", "info", "--format", "json", "--device", "sim:wearable"], state: state,
                                                 environment: ["TUNEUP_DEVICE": "tcp:127.0.0.1:1"])
        #expect(given.status == 0 && (try? json(given.stdout)["device"] as? String) == "sim:wearable", "\(given.stderr)")
        let unset = try await HardeningTests.run(["wearable", "info", "--format", "json"], state: state)
        #expect((try? json(unset.stdout)["device"] as? String) == "sim:wearable")
        #expect(await sim.quit() == 0)
    }
}
