import Foundation
import Records
import Testing

/// `tuneup records` on a records file filled through the Records API.
@Suite struct RecordsCLITests {
    /// Two units: A fails its mic test then passes on rework; B passes. Returns the file.
    static func filled() async throws -> String {
        let db = Scratch.directory + "/records.sqlite"
        let store = try await SQLiteRecordStore.open(path: db)
        for (hw, outcomes) in [("a0a0a0a0a0a0a0a0", [RunOutcome.fail, .pass]), ("b1b1b1b1b1b1b1b1", [.pass])] {
            let serial = try await store.reserveIdentity(.serial, for: hw, station: "s1", values: ["SN-\(hw.prefix(2))"])
            for outcome in outcomes {
                let run = try await store.startRun(RunStart(hardwareID: hw, station: "s1", slot: "tcp:127.0.0.1:4300", operatorName: "ann"))
                let value = outcome == .pass ? -38.0 : -43.5
                _ = try await store.recordStep(StepRecord(
                    name: "test:mic-sensitivity-left", startedAt: Date(), endedAt: Date(), outcome: outcome == .pass ? .pass : .fail,
                    message: outcome == .pass ? "" : "mic-sensitivity-left -43.50 dBFS is outside -42.00...-34.00",
                    measurements: [Records.Measurement(name: "mic-sensitivity-left", value: value, unit: "dBFS", low: -42, high: -34,
                                                       outcome: outcome == .pass ? .pass : .fail)]), in: run)
                try await store.finishRun(run, outcome: outcome, at: Date())
            }
            _ = try await store.markWritten(serial.id)
            _ = try await store.commit(serial.id)
        }
        return db
    }

    @Test func listShowReport() async throws {
        let db = try await Self.filled()
        let list = try await CLI.run(["records", "list", "--db", db])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.split(separator: "\n").count == 2)
        #expect(list.stdout.contains("a0a0a0a0a0a0a0a0  SN-a0  -  2 runs  pass  s1"), "\(list.stdout)")

        let listed = try json(try await CLI.run(["records", "list", "--db", db, "--format", "json"]).stdout)
        #expect((listed["units"] as? [[String: Any]])?.map { $0["serial"] as? String } == ["SN-a0", "SN-b1"])

        let show = try await CLI.run(["records", "show", "SN-a0", "--db", db, "--format", "json"])
        #expect(show.status == 0, "\(show.stderr)")
        let unit = try json(show.stdout)
        let runs = try #require(unit["runs"] as? [[String: Any]])
        #expect(runs.map { $0["outcome"] as? String } == ["fail", "pass"])
        #expect(runs.map { $0["reworkCount"] as? Int } == [0, 1])
        let text = try await CLI.run(["records", "show", "a0a0a0a0a0a0a0a0", "--db", db])
        #expect(text.stdout.contains("mic-sensitivity-left = -43.5 dBFS [-42.0...-34.0] fail"), "\(text.stdout)")
        #expect(text.stdout.contains("  test:mic-sensitivity-left fail  mic-sensitivity-left -43.50 dBFS"), "step names in full: \(text.stdout)")

        let report = try json(try await CLI.run(["records", "report", "--db", db, "--format", "json"]).stdout)
        #expect(report["units"] as? Int == 2 && report["runs"] as? Int == 3)
        #expect(report["firstPassYield"] as? Double == 0.5 && report["finalYield"] as? Double == 1)
        #expect((report["pareto"] as? [[String: Any]])?.first?["cause"] as? String == "mic-sensitivity-left")
        // A date alone as --until takes in that whole day.
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        let today = day.string(from: Date()), yesterday = day.string(from: Date().addingTimeInterval(-86_400))
        let untilToday = try json(try await CLI.run(["records", "report", "--db", db, "--until", today, "--format", "json"]).stdout)
        #expect(untilToday["runs"] as? Int == 3, "--until \(today) keeps today's runs: \(untilToday)")
        let untilYesterday = try json(try await CLI.run(["records", "report", "--db", db, "--until", yesterday, "--format", "json"]).stdout)
        #expect(untilYesterday["runs"] as? Int == 0, "\(untilYesterday)")
        let table = try await CLI.run(["records", "report", "--db", db, "--station", "s1"])
        #expect(table.stdout.contains("First-pass yield 50.0 %, final yield 100.0 %"), "\(table.stdout)")
    }

    /// A user who may only read the records file (and not write its directory) lists, shows, reports and exports it;
    /// nothing is created next to it. Run as `nobody` through setpriv (root may write anything).
    @Test func readingCommandsWorkOnARecordsFileTheUserMayOnlyRead() async throws {
        let db = try await Self.filled()
        let directory = (db as NSString).deletingLastPathComponent
        // A user who may not write: the binary must be executable by them (copied when its folder is private).
        var binary = CLI.binary.path
        if try await CLI.runAsNobody(binary, ["--version"]).status != 0 {
            let copy = Scratch.directory + "/tuneup"
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: (copy as NSString).deletingLastPathComponent)
            try FileManager.default.copyItem(atPath: binary, toPath: copy)
            binary = copy
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: db)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: directory)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory) }
        let before = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()

        let list = try await CLI.runAsNobody(binary, ["records", "list", "--db", db])
        #expect(list.status == 0, "stderr: \(list.stderr)")
        #expect(list.stdout.contains("a0a0a0a0a0a0a0a0  SN-a0"), "\(list.stdout)")
        let show = try await CLI.runAsNobody(binary, ["records", "show", "SN-b1", "--db", db])
        #expect(show.status == 0 && show.stdout.contains("b1b1b1b1b1b1b1b1"), "stderr: \(show.stderr)")
        let report = try await CLI.runAsNobody(binary, ["records", "report", "--db", db])
        #expect(report.status == 0 && report.stdout.contains("First-pass yield 50.0 %"), "stderr: \(report.stderr)")
        let export = try await CLI.runAsNobody(binary, ["records", "export", "--format", "csv", "--db", db])
        #expect(export.status == 0 && export.stdout.contains("SN-a0"), "stderr: \(export.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == before)

        // A file they may not read at all: one line, exit 74.
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: db)
        let unreadable = try await CLI.runAsNobody(binary, ["records", "list", "--db", db])
        #expect(unreadable.status == 74 && unreadable.stderrLines.count == 1, "stderr: \(unreadable.stderr)")
        #expect(unreadable.stderr.contains("cannot read records database \(db): permission denied"), "\(unreadable.stderr)")
    }

    @Test func exportsToFilesAtomicallyAndToStdout() async throws {
        let db = try await Self.filled()
        let out = Scratch.directory + "/units.csv"
        let csv = try await CLI.run(["records", "export", "--format", "csv", "--output", out, "--db", db])
        #expect(csv.status == 0 && csv.stdout.isEmpty, "\(csv.stderr)")
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(text.components(separatedBy: "\r\n").count == 5, "header, three rows, the end: \(text)")
        let junit = try await CLI.run(["records", "export", "--format", "junit", "--outcome", "fail", "--db", db])
        #expect(junit.stdout.contains("<testsuite name=\"SN-a0 run 1\"") && !junit.stdout.contains("run 2\""), "\(junit.stdout)")
        let all = try await CLI.run(["records", "export", "--db", db])
        #expect(all.status == 0)
        #expect(try JSONSerialization.jsonObject(with: Data(all.stdout.utf8)) is [[String: Any]])
    }

    @Test func badInputIsOneLine() async throws {
        let db = try await Self.filled()
        let missing = Scratch.directory + "/none.sqlite"
        for (args, code, text) in [
            (["records", "list", "--db", missing], Int32(74), "no records database at"),
            (["records", "show", "nobody", "--db", db], Int32(66), "no unit with hardware id or serial 'nobody'"),
            (["records", "export", "--format", "xlsx", "--db", db], Int32(64), "json, csv or junit"),
            (["records", "report", "--outcome", "great", "--db", db], Int32(64), "--outcome"),
            (["records", "report", "--since", "yesterday", "--db", db], Int32(64), "--since"),
            (["records", "export", "--output", "/proc/nope/units.json", "--db", db], Int32(74), "cannot write /proc/nope/units.json"),
        ] {
            let r = try await CLI.run(args)
            #expect(r.status == code, "\(args): \(r.stderr)")
            #expect(r.stderrLines.count == 1 && r.stderr.contains(text), "\(args): \(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "reading never creates the file")
    }
}
