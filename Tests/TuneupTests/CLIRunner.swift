import Foundation
import Synchronization

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
        let p = Process()
        p.executableURL = executable
        if let directory { p.currentDirectoryURL = URL(fileURLWithPath: directory) }
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        p.environment = env
        let out = Pipe(), err = Pipe(), input = Pipe()
        p.standardOutput = stdoutTo.flatMap { FileHandle(forWritingAtPath: $0) } ?? out
        p.standardError = stderrTo.flatMap { FileHandle(forWritingAtPath: $0) } ?? err
        p.standardInput = input
        try p.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // A pipe not handed to the process never ends: collect only those that were.
        let outData = stdoutTo == nil ? Collector(out.fileHandleForReading) : nil
        let errData = stderrTo == nil ? Collector(err.fileHandleForReading) : nil
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        if p.isRunning {
            p.terminate()
            p.waitUntilExit()
            throw CLIError("\(name) did not finish in \(timeout) s; stderr: \(errData?.textBlocking() ?? "")")
        }
        p.waitUntilExit()
        return Result(status: p.terminationStatus, stdout: outData?.textBlocking() ?? "", stderr: errData?.textBlocking() ?? "")
    }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Collects everything a pipe delivers, on a dedicated thread.
final class Collector: Sendable {
    private let data = Mutex(Data())
    private let done = Mutex(false)

    init(_ handle: FileHandle) {
        let thread = Thread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                data.withLock { $0.append(chunk) }
            }
            done.withLock { $0 = true }
        }
        thread.start()
    }

    func textBlocking() -> String {
        let deadline = Date().addingTimeInterval(30)
        while !done.withLock({ $0 }) && Date() < deadline { usleep(1000) }
        return data.withLock { String(decoding: $0, as: UTF8.self) }
    }

    /// Waits (off the cooperative pool) until at least `count` lines arrived; returns them.
    func lines(_ count: Int, timeout: Double = 30) async -> [String] {
        (try? await offThePool { self.linesBlocking(count, timeout: timeout) }) ?? []
    }

    /// Everything collected once the pipe closed (waits for that off the cooperative pool).
    func text() async -> String {
        (try? await offThePool { self.textBlocking() }) ?? ""
    }

    /// Waits until at least `count` lines arrived; returns them.
    func linesBlocking(_ count: Int, timeout: Double = 30) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let lines = data.withLock { String(decoding: $0, as: UTF8.self) }.split(separator: "\n").map(String.init)
            if lines.count >= count { return lines }
            usleep(5000)
        }
        return data.withLock { String(decoding: $0, as: UTF8.self) }.split(separator: "\n").map(String.init)
    }
}

/// A long-running `tuneup sim KIND ...` (headset, speaker, ...) with its stdin open for control lines.
/// (`@unchecked Sendable`: one test drives it at a time; only the waits move to other threads.)
final class RunningSimulator: @unchecked Sendable {
    let process = Process()
    let input = Pipe()
    let output: Collector
    let errors: Collector
    let addresses: [String]

    /// Starts `tuneup sim KIND ARGS` and waits (off the cooperative pool) for its `count` addresses.
    /// `namespace`: run it in that network namespace (`ip netns exec`).
    static func start(_ args: [String], count: Int = 1, kind: String = "headset", namespace: String? = nil) async throws -> RunningSimulator {
        try await offThePool { try RunningSimulator(["sim", kind] + args, count: count, namespace: namespace) }
    }

    private init(_ arguments: [String], count: Int, namespace: String?) throws {
        if let namespace {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", namespace, CLI.binary.path] + arguments
        } else {
            process.executableURL = CLI.binary
            process.arguments = arguments
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        output = Collector(out.fileHandleForReading)
        errors = Collector(err.fileHandleForReading)
        addresses = output.linesBlocking(count)
        guard addresses.count >= count else {
            process.terminate()
            throw CLIError("\(arguments.prefix(2).joined(separator: " ")) printed no address; stderr: \(errors.textBlocking())")
        }
    }

    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// Sends `quit` and waits (off the cooperative pool) for the exit status.
    func quit() async -> Int32 {
        (try? await offThePool { self.quitBlocking() }) ?? -1
    }

    private func quitBlocking() -> Int32 {
        send("quit")
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Sends SIGTERM and waits (off the cooperative pool) for the exit status.
    func stop() async -> Int32 {
        (try? await offThePool {
            self.process.terminate()
            self.process.waitUntilExit()
            return self.process.terminationStatus
        }) ?? -1
    }

    deinit { if process.isRunning { process.terminate() } }
}

/// The exit status of `process` once it ends by itself (waited for off the cooperative pool, at most `seconds`; then
/// it is terminated).
func exitStatus(of process: Process, within seconds: Double = 30) async throws -> Int32 {
    try await offThePool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Runs blocking `body` on a thread of its own and awaits its result, keeping the cooperative pool free.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// A fresh directory per test.
enum Scratch {
    static var directory: String {
        let path = NSTemporaryDirectory() + "tuneup-tests-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// Parses JSON output into a dictionary.
func json(_ text: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
        throw CLIError("not a JSON object: \(text)")
    }
    return object
}
