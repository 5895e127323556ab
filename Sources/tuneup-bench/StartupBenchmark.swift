import Foundation
import Spawn
import Support

/// Start-up of whole processes, measured side by side in one run: the system's `python3 -c pass` (the yardstick),
/// `tuneup --version` (start-up alone: the dynamic loader, the runtimes' initialisation, argument parsing) and
/// `tuneup probe --device tcp:...` against a simulated headset (start-up plus one real command's work). The three are
/// run in turn, round after round, so that a busy moment of the machine falls on all three alike.
struct StartupBenchmark {
    struct Case {
        var name: String
        var path: String
        var arguments: [String]
        var times: [Double] = []
        var median: Double { Percentile.of(sorted: times.sorted(), 50) ?? 0 }
        var p90: Double { Percentile.of(sorted: times.sorted(), 90) ?? 0 }
        var min: Double { times.min() ?? 0 }
    }

    struct Result {
        var python: Case
        var version: Case
        var probe: Case
        var address: String
    }

    var tuneup: String
    var python: String
    var runs: Int
    var warmUp = 3

    func run() throws -> Result {
        let sim = try SimulatorProcess(tuneup: tuneup, count: 1)
        defer { sim.quit() }
        let address = sim.addresses[0]
        var cases = [
            Case(name: "python3 -c pass", path: python, arguments: ["-c", "pass"]),
            Case(name: "tuneup --version", path: tuneup, arguments: ["--version"]),
            Case(name: "tuneup probe", path: tuneup, arguments: ["probe", "--device", address]),
        ]
        // Warm-up rounds (the page cache, the simulator's first connection) are not counted.
        for round in 0..<(warmUp + runs) {
            for i in cases.indices {
                let seconds = try timed(cases[i])
                if round >= warmUp { cases[i].times.append(seconds) }
            }
        }
        return Result(python: cases[0], version: cases[1], probe: cases[2], address: address)
    }

    /// One run of `c`, spawned as a shell would (posix_spawn, standard streams on /dev/null), wall time to its exit.
    private func timed(_ c: Case) throws -> Double {
        let start = DispatchTime.now()
        let status = try spawnAndWait(c.path, c.arguments)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        guard status == 0 else { throw BenchError("\(c.name) exited with \(status)") }
        return seconds
    }

    /// The shared libraries the dynamic loader maps for `binary` (what `ldd` lists, the vDSO left out), or nil when
    /// `ldd` is not there.
    static func sharedLibraries(_ binary: String) -> [String]? {
        guard let ldd = ["/usr/bin/ldd", "/bin/ldd"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
              let p = try? ChildProcess(ldd, [binary], stderr: .null) else { return nil }
        let text = p.output!.textBlocking()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { return nil }
        return text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("linux-vdso") }
            .map { String($0.split(separator: " ").first ?? "") }
    }
}
