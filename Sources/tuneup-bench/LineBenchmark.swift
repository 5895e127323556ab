import Foundation
import Support
import ThrowawayPostgres

/// A line of station processes sharing one PostgreSQL server of the benchmark's own: `stations` processes of
/// `tuneup station run --db postgres://...` provision `units` blank simulated units between them (each its share
/// of the slots), optionally with the server stopped for `outage` seconds while they run. Then the server's records
/// are checked: identities issued twice or to a unit twice, runs per unit, passes.
struct LineBenchmark {
    struct Result {
        var seconds: Double
        var exitCodes: [Int32]
        var units: Int
        var runs: Int
        var passed: Int
        var duplicateValues: Int
        var unitsWithTwoLiveIdentitiesOfAKind: Int
        var unitsWithMoreThanOneRun: Int
        var committed: Int
        var voided: Int
        var leasedLeft: Int
        var outageSeconds: Double
    }

    var tuneup: String
    var recipe: String
    var stations: Int
    var units: Int
    var lease: Int
    var timeScale: Double
    var outageAfter: Double
    var outage: Double

    func run() async throws -> Result {
        let pg = try ThrowawayPostgres.dedicated()
        defer { pg.stop() }
        let url = try pg.createDatabase()
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let sim = try SimulatorProcess(tuneup: tuneup, count: units, extra: ["--blank", "--fail-share", "0", "--time-scale", "\(timeScale)"])
        defer { sim.quit() }
        let directory = NSTemporaryDirectory() + "tuneup-bench-line-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let start = ContinuousClock.now
        let tuneup = self.tuneup, outageAfter = self.outageAfter, outage = self.outage
        let commands: [[String]] = (0..<stations).map { k in
            let mine = sim.addresses.enumerated().filter { $0.offset % stations == k }.map(\.element)
            return ["station", "run", "--recipe", recipe, "--db", url, "--station", "line-\(k + 1)", "--lease", "\(lease)",
                    "--outbox", "\(directory)/line-\(k + 1).outbox.sqlite", "--upload-wait", "120", "--format", "json"] + mine.flatMap { ["--device", $0] }
        }
        async let down: Double = outage > 0 ? Self.stop(pg, after: outageAfter, for: outage) : 0
        let codes = try await withThrowingTaskGroup(of: Int32.self) { group in
            for args in commands {
                group.addTask { try await Blocking.perform("station process") { try spawnAndWait(tuneup, args) } }
            }
            var codes: [Int32] = []
            for try await code in group { codes.append(code) }
            return codes
        }
        let outageSeconds = try await down
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        func count(_ sql: String) throws -> Int { Int(try pg.psql(database, sql)) ?? -1 }
        return Result(
            seconds: seconds, exitCodes: codes,
            units: try count("SELECT COUNT(*) FROM units"),
            runs: try count("SELECT COUNT(*) FROM runs"),
            passed: try count("SELECT COUNT(*) FROM runs WHERE outcome = 'pass'"),
            duplicateValues: try count("SELECT COUNT(*) FROM (SELECT kind, value FROM identities GROUP BY kind, value HAVING COUNT(*) > 1) d"),
            unitsWithTwoLiveIdentitiesOfAKind: try count("""
                SELECT COUNT(*) FROM (SELECT hardware_id, kind FROM identities WHERE state <> 'voided' AND hardware_id IS NOT NULL
                                      GROUP BY hardware_id, kind HAVING COUNT(*) > 1) d
                """),
            unitsWithMoreThanOneRun: try count("SELECT COUNT(*) FROM (SELECT hardware_id FROM runs GROUP BY hardware_id HAVING COUNT(*) > 1) d"),
            committed: try count("SELECT COUNT(*) FROM identities WHERE state = 'committed'"),
            voided: try count("SELECT COUNT(*) FROM identities WHERE state = 'voided'"),
            leasedLeft: try count("SELECT COUNT(*) FROM identities WHERE state = 'leased'"),
            outageSeconds: outageSeconds)
    }
}

extension LineBenchmark {
    /// Stops the server `after` seconds for `seconds`; returns how long it was down.
    static func stop(_ pg: ThrowawayPostgres, after: Double, for seconds: Double) async throws -> Double {
        try await Task.sleep(for: .seconds(after))
        let down = ContinuousClock.now
        try await Blocking.perform("pg_ctl stop") { try pg.pause() }
        try await Task.sleep(for: .seconds(seconds))
        try await Blocking.perform("pg_ctl start") { try pg.start() }
        return (ContinuousClock.now - down) / .seconds(1)
    }
}
