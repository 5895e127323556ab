import Foundation
import Spawn
@_exported import TestSupport

/// Runs the built `tuneup` binary.
enum CLI {
    /// `.build/<config>/tuneup`, next to the test bundle.
    static var binary: URL {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("tuneup").path), dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir.appendingPathComponent("tuneup")
    }

    struct Result: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
        var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// Runs `tuneup ARGS` to completion (at most `timeout` seconds) with a private state directory.
    ///
    /// The wait happens on a thread of its own: a test that blocked a cooperative-pool thread (there is one per core)
    /// for the whole run of a subprocess would stall every other test in the parallel run.
    static func run(_ args: [String], state: String = Scratch.directory, stdin: String? = nil, directory: String? = nil,
                    timeout: Double = 60) async throws -> Result {
        try await offThePool { try runBlocking(args, state: state, stdin: stdin, directory: directory, timeout: timeout) }
    }

    /// Runs `binary ARGS` as the user `nobody` (setpriv; uid and gid 65534, no groups): a user who may not write
    /// what root made.
    static func runAsNobody(_ binary: String, _ args: [String], timeout: Double = 60) async throws -> Result {
        let state = Scratch.directory
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: state)
        return try await offThePool {
            try runProcess(URL(fileURLWithPath: "/usr/bin/setpriv"), ["--reuid", "65534", "--regid", "65534", "--clear-groups", binary] + args,
                           environment: ["XDG_STATE_HOME": state, "TUNEUP_DEVICE": nil], timeout: timeout,
                           name: "tuneup \(args.joined(separator: " ")) as nobody")
        }
    }

    private static func runBlocking(_ args: [String], state: String, stdin: String?, directory: String?, timeout: Double) throws -> Result {
        try runProcess(binary, args, environment: ["XDG_STATE_HOME": state, "TUNEUP_DEVICE": nil], stdin: stdin,
                       directory: directory, timeout: timeout, name: "tuneup \(args.joined(separator: " "))")
    }

    /// Runs `executable ARGS` to completion, blocking the calling thread (at most `timeout` seconds, then it is
    /// terminated and `name` is named in the error). `environment` overrides the test's own (nil removes a variable).
    /// `stdoutTo`/`stderrTo`: a file (e.g. /dev/full) instead of a pipe; the result's text is then empty.
    static func runProcess(_ executable: URL, _ args: [String], environment: [String: String?], stdin: String? = nil,
                           directory: String? = nil, stdoutTo: String? = nil, stderrTo: String? = nil,
                           timeout: Double, name: String) throws -> Result {
        let p = try ChildProcess(executable.path, args, environment: environment, directory: directory,
                                 stdin: .pipe, stdout: stdoutTo.map { .file($0) } ?? .pipe, stderr: stderrTo.map { .file($0) } ?? .pipe)
        if let stdin { p.write(stdin) }
        p.closeInput()
        if !p.waitForEnd(upTo: timeout) {
            let threads = HangReport.threads(of: p.processIdentifier)
            p.waitUntilExit(within: 0)
            throw CLIError("\(name) did not finish in \(timeout) s; stderr: \(p.errors?.textBlocking(timeout: 5) ?? "")\nits threads:\n\(threads)")
        }
        return Result(status: p.terminationStatus, stdout: p.output?.textBlocking() ?? "", stderr: p.errors?.textBlocking() ?? "")
    }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// What a child process writes to a pipe (`ChildProcess.output`/`errors`), with waits that keep the cooperative pool
/// free.
typealias Collector = OutputCollector

extension OutputCollector {
    /// Everything collected once the pipe closed (the wait suspends: it holds no thread).
    func text() async -> String { await finishedText() }
}

/// A long-running `tuneup sim KIND ...` (headset, speaker, ...) with its stdin open for control lines.
final class RunningSimulator: Sendable {
    let process: ChildProcess
    var output: Collector { process.output! }
    var errors: Collector { process.errors! }
    let addresses: [String]

    /// Starts `tuneup sim KIND ARGS` and waits (off the cooperative pool) for its `count` addresses.
    /// `namespace`: run it in that network namespace (`ip netns exec`).
    static func start(_ args: [String], count: Int = 1, kind: String = "headset", namespace: String? = nil) async throws -> RunningSimulator {
        try await offThePool { try RunningSimulator(["sim", kind] + args, count: count, namespace: namespace) }
    }

    private init(_ arguments: [String], count: Int, namespace: String?) throws {
        if let namespace {
            process = try ChildProcess("/usr/sbin/ip", ["netns", "exec", namespace, CLI.binary.path] + arguments, stdin: .pipe)
        } else {
            process = try ChildProcess(CLI.binary.path, arguments, stdin: .pipe)
        }
        addresses = Array(process.output!.linesBlocking(count).prefix(count))
        guard addresses.count >= count else {
            process.terminate()
            throw CLIError("\(arguments.prefix(2).joined(separator: " ")) printed no address; stderr: \(process.errors!.textBlocking(timeout: 5))")
        }
    }

    func send(_ line: String) { process.write(line + "\n") }

    /// Sends `quit` and waits (off the cooperative pool) for the exit status.
    func quit() async -> Int32 {
        send("quit")
        return (try? await exitStatus(of: process)) ?? -1
    }

    /// Sends SIGTERM and waits (off the cooperative pool) for the exit status.
    func stop() async -> Int32 {
        process.terminate()
        return (try? await exitStatus(of: process)) ?? -1
    }
}

/// The exit status of `process` once it ends by itself (waited for off the cooperative pool, at most `seconds`; then
/// it is terminated).
func exitStatus(of process: ChildProcess, within seconds: Double = 30) async throws -> Int32 {
    await process.exited(within: seconds)
    return process.terminationStatus
}

/// A fresh directory per test, under the test process's temporary root (removed when the process exits; the
/// `tuneup` children that use it are waited for). If it cannot be made, a path that does not exist: the test using it
/// then fails on its first file operation, with this path in the message.
enum Scratch {
    static var directory: String {
        (try? TemporaryDirectory.make("tuneup-tests")) ?? "/nonexistent/tuneup-tests-could-not-be-made"
    }
}

/// Parses JSON output into a dictionary.
func json(_ text: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
        throw CLIError("not a JSON object: \(text)")
    }
    return object
}
