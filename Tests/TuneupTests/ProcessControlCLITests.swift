import Foundation
import Records
import Spawn
import Testing

/// `station run`'s traceability options, quarantine and SPC alarm, and `records release | attachment | spc`, as an
/// operator and a script use them. Serialized: each case runs a simulator and stations.
@Suite(.serialized) struct ProcessControlCLITests {
    typealias S = StationCLITests

    @Test func traceabilityAndAttachmentsReachRecordsShowExportAndAttachment() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"])
        let (directory, recipe) = try S.recipe { text in
            text.replacingOccurrences(of: "  - name: battery-level\n", with: "  - name: battery-level\n    attach: [readings]\n")
                + "\nmetadata:\n  line: A\n"
        }
        let db = directory + "/records.sqlite"
        let result = try await CLI.run(["station", "run", "--recipe", recipe, "-d", sim.addresses[0], "--station", "t1",
                                        "--work-order", "WO-4711", "--lot", "L-48", "--fixture", "fx-1", "--meta", "bench=3",
                                        "--meta", "line=B", "--format", "json"], timeout: 120)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        _ = await sim.quit()

        // The operator by default: $USER, else the login name; never empty.
        let store = try await SQLiteRecordStore.open(path: db)
        let run = try #require(try await store.runs().first)
        let user = ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 }
        #expect(!run.start.operatorName.isEmpty && (user == nil || run.start.operatorName == user), "\(run.start.operatorName)")
        #expect(run.start.workOrder == "WO-4711" && run.start.metadata == ["line": "B", "bench": "3"])

        let show = try await CLI.run(["records", "show", run.start.hardwareID, "--db", db])
        #expect(show.status == 0, "\(show.stderr)")
        for text in ["work order WO-4711, lot L-48, fixture fx-1", "metadata: bench=3; line=B", "attachment battery-level-readings.csv (text/csv",
                     "operator \(run.start.operatorName)"] {
            #expect(show.stdout.contains(text), "records show lacks '\(text)': \(show.stdout)")
        }
        let csv = try await CLI.run(["records", "export", "--format", "csv", "--db", db])
        #expect(csv.stdout.contains(",WO-4711,L-48,fx-1,bench=3; line=B,battery-level-readings.csv,,\r\n"), "\(csv.stdout.prefix(600))")
        let json = try await CLI.run(["records", "export", "--db", db])
        #expect(json.stdout.contains("\"workOrder\" : \"WO-4711\"") && json.stdout.contains("\"sha256\""), "\(json.stdout.prefix(600))")

        let out = directory + "/readings.csv"
        let written = try await CLI.run(["records", "attachment", "\(run.id)", "battery-level-readings.csv", "-o", out, "--db", db])
        #expect(written.status == 0, "\(written.stderr)")
        let stored = try #require(try await store.attachment(run: run.id, name: "battery-level-readings.csv"))
        #expect(try await offThePool { try Data(contentsOf: URL(fileURLWithPath: out)) } == stored.content)
        let toStdout = try await CLI.run(["records", "attachment", "\(run.id)", "battery-level-readings.csv", "--db", db])
        #expect(Data(toStdout.stdout.utf8) == stored.content)
        let missing = try await CLI.run(["records", "attachment", "\(run.id)", "nothing.csv", "--db", db])
        S.refused(missing, 66, "no attachment named 'nothing.csv'")
        let noRun = try await CLI.run(["records", "attachment", "999", "x", "--db", db])
        S.refused(noRun, 66, "no run 999")
    }

    @Test func badTraceabilityArgumentsAndRecipesAreOneLine() async throws {
        let (directory, recipe) = try S.recipe()
        for (args, text) in [
            (["--meta", "bad key=1"], "--meta key 'bad key'"),
            (["--meta", "novalue"], "--meta takes KEY=VALUE"),
            (["--meta", "k=1", "--meta", "k=2"], "--meta k is given twice"),
            (["--meta", "k=\(String(repeating: "v", count: 300))"], "longer than 256"),
            (["--work-order", "a\nb"], "one line"),
            (["--lot", ""], "--lot must not be empty"),
            (["--operator", ""], "--operator must not be empty"),
        ] {
            let result = try await CLI.run(["station", "run", "--recipe", recipe, "-d", "tcp:127.0.0.1:9"] + args)
            S.refused(result, 64, text)
        }
        for (extra, text) in [
            ("metadata:\n  \"a b\": 1\n", "metadata.a b"),
            ("max-rework: 0\n", "max-rework: 0 is out of range"),
            ("spc:\n  window: 20\n", "spc: give min-cpk"),
            ("spc:\n  window: 20\n  measurements: { mic: 1 }\n", "spc.measurements.mic"),
        ] {
            let (_, bad) = try S.recipe { $0 + "\n" + extra }
            let result = try await CLI.run(["station", "run", "--recipe", bad, "-d", "tcp:127.0.0.1:9"])
            S.refused(result, 64, text)
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/records.sqlite"))
        let window = try await CLI.run(["records", "spc", "--window", "1", "--db", directory + "/records.sqlite"])
        S.refused(window, 64, "--window must be 2...10000")
        let reason = try await CLI.run(["records", "release", "x", "--reason", "a\nb", "--db", directory + "/records.sqlite"])
        S.refused(reason, 64, "one line")
        let noFile = try await CLI.run(["records", "release", "x", "--db", directory + "/none.sqlite"])
        S.refused(noFile, 74, "no records database")
    }

    /// Fails once, is quarantined (max-rework 1): refused with one line and a `quarantined` event until released;
    /// the release is shown with who and why.
    @Test func aQuarantinedUnitIsRefusedUntilReleased() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--fail-share", "1", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"])
        let (directory, recipe) = try S.recipe { $0 + "\nmax-rework: 1\n" }
        let db = directory + "/records.sqlite"
        let station = ["station", "run", "--recipe", recipe, "-d", sim.addresses[0], "--station", "q1"]
        let failed = try await CLI.run(station, timeout: 120)
        #expect(failed.status == 1 && failed.stdout.contains("FAIL at calibrate-anc"), "\(failed.stdout)\(failed.stderr)")

        let refused = try await CLI.run(station + ["--format", "json"], timeout: 120)
        #expect(refused.status == 1, "stderr: \(refused.stderr)")
        let events = S.events(refused.stdout)
        let quarantined = try #require(events.first { $0["event"] as? String == "quarantined" })
        #expect(quarantined["failures"] as? Int == 1 && quarantined["maxRework"] as? Int == 1)
        let hardwareID = try #require(quarantined["hardwareID"] as? String)
        #expect(!events.contains { $0["event"] as? String == "step-started" }, "nothing is done to it")
        let unit = try #require(events.first { $0["event"] as? String == "finished" }?["unit"] as? [String: Any])
        #expect(unit["outcome"] as? String == "quarantined")
        let totals = try #require(events.last?["totals"] as? [String: Any])
        #expect(totals["quarantined"] as? Int == 1 && totals["completed"] as? Int == 0)

        let text = try await CLI.run(station, timeout: 120)
        #expect(text.status == 1)
        #expect(text.stdout.split(separator: "\n").filter { $0.contains("QUARANTINED") }.count == 1, "one line: \(text.stdout)")

        let release = try await CLI.run(["records", "release", hardwareID, "--reason", "microphone replaced", "--operator", "bob", "--db", db])
        #expect(release.status == 0 && release.stdout.contains("Released \(hardwareID) (1 failed run) by bob"), "\(release.stdout)\(release.stderr)")
        let again = try await CLI.run(["records", "release", hardwareID, "--db", db])
        S.refused(again, 1, "nothing to release")
        let nobody = try await CLI.run(["records", "release", "no-such-unit", "--db", db])
        S.refused(nobody, 66, "no unit")
        let show = try await CLI.run(["records", "show", hardwareID, "--db", db])
        #expect(show.stdout.contains("by bob after 1 failed run: microphone replaced"), "\(show.stdout)")

        let reworked = try await CLI.run(station, timeout: 120)
        #expect(reworked.status == 1 && reworked.stdout.contains("FAIL at calibrate-anc"), "provisioned again: \(reworked.stdout)")
        _ = await sim.quit()
    }

    /// Three units whose microphones have drifted out of their limits (Cpk below 0): with `spc: { window: 2, min-cpk: 1.33 }`
    /// the station says why in one line and as an `alarm` event, and exits 3.
    @Test func anSPCAlarmExitsThree() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--count", "3", "--time-scale", "0", "--seed", "11", "--listen", "tcp:127.0.0.1:0"], count: 3)
        let (directory, recipe) = try S.recipe { text in
            text.replacingOccurrences(of: "limits: { low: -42, high: -34 }", with: "limits: { low: -30, high: -29 }")
                .replacingOccurrences(of: "marginal: { low: -41, high: -35 }", with: "marginal: { low: -29.9, high: -29.1 }")
                .replacingOccurrences(of: "retry: { attempts: 3, delay: 200ms }", with: "retry: { attempts: 1 }")
                + "\nspc:\n  window: 2\n  min-cpk: 1.33\n  measurements: { anc-correction: 0 }\n"
        }
        let result = try await CLI.run(["station", "run", "--recipe", recipe, "-d", sim.addresses[0], "-d", sim.addresses[1],
                                        "-d", sim.addresses[2], "--format", "json"], timeout: 120)
        _ = await sim.quit()
        S.refused(result, 3, "the station stopped: SPC alarm: mic-sensitivity-left Cpk")
        let events = S.events(result.stdout)
        let alarm = try #require(events.first { $0["event"] as? String == "alarm" })
        #expect(alarm["kind"] as? String == "cpk" && alarm["measurement"] as? String == "mic-sensitivity-left" && alarm["window"] as? Int == 2)
        #expect((alarm["value"] as? Double).map { $0 < 1.33 } == true && alarm["limit"] as? Double == 1.33)
        #expect(events.contains { $0["event"] as? String == "stopping" && ($0["reason"] as? String)?.hasPrefix("SPC alarm") == true })

        // records spc shows the figures the alarm judged.
        let spc = try await CLI.run(["records", "spc", "--window", "2", "--db", directory + "/records.sqlite", "--format", "json"])
        #expect(spc.status == 0, "\(spc.stderr)")
        let figures = try #require(try json(spc.stdout) as? [String: Any])
        let measurements = try #require(figures["measurements"] as? [[String: Any]])
        let mic = try #require(measurements.first { $0["name"] as? String == "mic-sensitivity-left" })
        #expect(mic["count"] as? Int == 2 && (mic["cpk"] as? Double).map { $0 < 1.33 } == true, "\(mic)")
        let text = try await CLI.run(["records", "spc", "--window", "2", "--db", directory + "/records.sqlite"])
        #expect(text.stdout.hasPrefix("Last 2 units (window 2): first-pass yield"), "\(text.stdout)")
    }
}
