import Foundation

/// Starts `tuneup sim headset` on TCP and times whole `tuneup probe` processes against it.
struct ProbeBenchmark {
    struct Result {
        var address: String
        var requestsPerProbe: Int
        var times: [Double]
        var median: Double { times[times.count / 2] }
        var p90: Double { times[Swift.min(times.count - 1, Int(Double(times.count) * 0.9))] }
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
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tuneup)
        p.arguments = ["probe", "--device", address] + (verbose ? ["--verbose"] : [])
        let err = Pipe()
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        try p.run()
        let log = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw BenchError("tuneup probe failed (\(p.terminationStatus)): \(String(decoding: log, as: UTF8.self))")
        }
        return String(decoding: log, as: UTF8.self)
    }
}

/// `tuneup sim KIND --count N` in a process of its own, with the N addresses it prints first (a headset: on TCP,
/// port 0, battery not draining).
final class SimulatorProcess {
    let addresses: [String]
    private let process = Process()
    private let input = Pipe()

    init(tuneup: String, kind: String = "headset", count: Int, extra: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: tuneup)
        let defaults = kind == "headset" ? ["--listen", "tcp:127.0.0.1:0", "--battery-drain", "0"] : []
        process.arguments = ["sim", kind, "--count", "\(count)"] + defaults + extra
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        var data = Data()
        while data.filter({ $0 == 0x0A }).count < count {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { throw BenchError("the simulator exited before printing \(count) addresses") }
            data.append(chunk)
        }
        addresses = String(decoding: data, as: UTF8.self).split(separator: "\n").prefix(count).map(String.init)
    }

    /// Stops the simulator (a speaker simulator writes its recordings) and waits for it.
    func quit() {
        input.fileHandleForWriting.write(Data("quit\n".utf8))
        process.waitUntilExit()
    }
}

/// Runs `path ARGS` with stdin, stdout and stderr on /dev/null; returns the exit status.
func spawnAndWait(_ path: String, _ args: [String]) throws -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for fd in [Int32(0), 1, 2] {
        posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
    }
    let argv = ([path] + args).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid = pid_t()
    let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
    guard rc == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
