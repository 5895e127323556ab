import Foundation
import TestSupport
import Testing

/// Options of `station run` and `records` that cannot work, refused with one line and 64 before anything is opened
/// (issue 30, item 22).
@Suite struct StationRecordsOptionsCLITests {
    @Test func stationOptionsThatCannotWorkAreRefusedBeforeAnythingIsOpened() async throws {
        let (directory, recipe) = try StationCLITests.recipe()
        let slot = ["-d", "tcp:127.0.0.1:9"]
        let file = directory + "/r.sqlite"
        for (args, text) in [
            (["-d", "tcp:127.0.0.1:0"], "port 0 is no device's port"),
            (slot + ["--lease", "8"], "--lease is for a PostgreSQL --db"),
            (slot + ["--db", file, "--lease", "8"], "--lease is for a PostgreSQL --db"),
            (slot + ["--outbox", directory + "/o.sqlite"], "--outbox is for a PostgreSQL --db"),
            (slot + ["--db", file, "--upload-wait", "5"], "--upload-wait is for a PostgreSQL --db"),
            (slot + ["--db", "mysql://line@db.local/line"], "'mysql://' databases are not supported"),
            (slot + ["--db", ""], "the records location is empty"),
        ] {
            let result = try await CLI.run(["station", "run", "--recipe", recipe] + args)
            StationCLITests.refused(result, 64, text)
        }
        for name in ["records.sqlite", "r.sqlite", "o.sqlite", "mysql:"] {
            #expect(!FileManager.default.fileExists(atPath: directory + "/" + name), "\(name) was made")
        }
    }

    @Test func recordsOptionsThatCannotWorkAreRefused() async throws {
        let directory = Scratch.directory
        let unknown = try await CLI.run(["records", "frobnicate", "--db", directory + "/x.sqlite"])
        StationCLITests.refused(unknown, 64, "'frobnicate' is not a subcommand of 'tuneup records' (list, show")
        #expect(!unknown.stderr.contains("--db"), "\(unknown.stderr)")
        for sub in [["list"], ["report"], ["release", "0011223344556677"]] {
            let result = try await CLI.run(["records"] + sub + ["--db", "mysql://line@db.local/line"])
            StationCLITests.refused(result, 64, "'mysql://' databases are not supported")
        }
        // An empty file is no "older Tuneup"'s: it says it is empty.
        let empty = directory + "/empty.sqlite"
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        let list = try await CLI.run(["records", "list", "--db", empty])
        #expect(list.status == 74, "\(list.stderr)")
        #expect(list.stderr.contains("is empty") && !list.stderr.contains("older"), "\(list.stderr)")
    }

    /// A slot whose unit never answers ends the run at once: no rate is made of a run shorter than a minute.
    @Test func aShortRunReportsNoUnitsPerHour() async throws {
        let (_, recipe) = try StationCLITests.recipe()
        let result = try await CLI.run(["station", "run", "--recipe", recipe, "-d", "tcp:127.0.0.1:9", "--wait", "0.1", "--format", "json"],
                                       timeout: 120)
        #expect(result.status == 1, "\(result.stderr)")
        let totals = try #require(StationCLITests.events(result.stdout).last?["totals"] as? [String: Any])
        #expect(totals["errors"] as? Int == 1)
        let elapsed = try #require(totals["elapsed"] as? Double)
        if elapsed < 60 {
            #expect(totals["unitsPerHour"] == nil, "\(totals)")
        } else {
            #expect(totals["unitsPerHour"] as? Double == 3600 / elapsed)
        }
    }

    /// An outage of the line's PostgreSQL database is an event with --format json too (text mode prints a line).
    @Test func aLineDatabaseOutageIsAJSONEvent() async throws {
        try await withDedicatedPostgres { pg in
            let url = try await offThePool { try pg.createDatabase() }
            let (sim, _, args) = try await StationCLITests.oneUnit()
            var lineArgs = args
            lineArgs[lineArgs.firstIndex(of: "--db")! + 1] = url
            let station = try await StationProcess.start(lineArgs + ["--watch"])
            #expect(try await station.onEvent { $0["event"] as? String == "finished" }, "the station's unit never finished")
            try await offThePool { try pg.pause() }
            let lost = try await station.onEvent { $0["event"] as? String == "records" && $0["status"] as? String == "lost" }
            #expect(lost, "no records/lost event")
            try await offThePool { try pg.start() }
            let held = try await station.onEvent { $0["event"] as? String == "records" && $0["status"] as? String == "held" }
            #expect(held, "no records/held event")
            station.process.signal(SIGINT)
            #expect(await station.exitStatus() == 130)
            _ = await sim.quit()
        }
    }
}
