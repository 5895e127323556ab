import Foundation
import Spawn
import Support

/// Starts `tuneup sim headset` on TCP and times whole `tuneup probe` processes against it.
struct ProbeBenchmark {
    struct Result {
        var address: String
        var requestsPerProbe: Int
        var times: [Double]
        var median: Double { Percentile.of(sorted: times, 50) ?? 0 }
        var p90: Double { Percentile.of(sorted: times, 90) ?? 0 }
        var min: Double { times.first ?? 0 }
        var max: Double { times.last ?? 0 }
    }

    var tuneup: String
    var runs: Int

    func run() throws -> Result {
        let sim = try SimulatorProcess(tuneup: tuneup, count: 1)
        defer { sim.quit() }
        let address = sim.addresses[0]
        // One verbose run to count the requests a probe makes.
        let requests = try probe(address, verbose: true).split(separator: "\n").filter { $0.contains("] → ") }.count
        // Timed runs are spawned as a shell would (posix_spawn, output to /dev/null): Foundation's Process adds
        // tens of milliseconds of its own per launch, which is not what a user of the CLI waits for.
        var times: [Double] = []
        for _ in 0..<runs {
            let start = DispatchTime.now()
            let status = try spawnAndWait(tuneup, ["probe", "--device", address])
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
            guard status == 0 else { throw BenchError("tuneup probe exited with \(status)") }
        }
        return Result(address: address, requestsPerProbe: requests, times: times.sorted())
    }

    private func probe(_ address: String, verbose: Bool) throws -> String {
        let p = try ChildProcess(tuneup, ["probe", "--device", address] + (verbose ? ["--verbose"] : []), stdout: .null)
        p.waitUntilExit()
        let log = p.errors!.textBlocking()
        guard p.terminationStatus == 0 else { throw BenchError("tuneup probe failed (\(p.shellStatus)): \(log)") }
        return log
    }
}

/// `tuneup sim KIND --count N` in a process of its own, with the N addresses it prints first (a headset: on TCP,
/// port 0, battery not draining).
final class SimulatorProcess: Sendable {
    let addresses: [String]
    private let process: ChildProcess
    /// The simulator's process id (for its CPU time).
    var pid: pid_t { process.processIdentifier }

    init(tuneup: String, kind: String = "headset", count: Int, extra: [String] = []) throws {
        let defaults = kind == "headset" ? ["--listen", "tcp:127.0.0.1:0", "--battery-drain", "0"] : []
        process = try ChildProcess(tuneup, ["sim", kind, "--count", "\(count)"] + defaults + extra, stdin: .pipe, stderr: .null)
        let lines = process.output!.linesBlocking(count, timeout: 60)
        guard lines.count >= count else {
            process.terminate()
            throw BenchError("the simulator printed \(lines.count) of \(count) addresses")
        }
        addresses = Array(lines.prefix(count))
    }

    /// Stops the simulator (a speaker simulator writes its recordings) and waits for it.
    func quit() {
        process.write("quit\n")
        process.waitUntilExit(within: 60)
    }
}

/// Runs `path ARGS` with stdin, stdout and stderr on /dev/null; returns the exit status (128 + the signal for a
/// process a signal ended).
func spawnAndWait(_ path: String, _ args: [String]) throws -> Int32 {
    let p = try ChildProcess(path, args, stdout: .null, stderr: .null)
    p.waitUntilExit()
    return p.shellStatus
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
