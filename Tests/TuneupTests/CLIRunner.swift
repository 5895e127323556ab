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

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// Runs `tuneup ARGS` to completion (at most `timeout` seconds) with a private state directory.
    static func run(_ args: [String], state: String = Scratch.directory, stdin: String? = nil, timeout: Double = 30) throws -> Result {
        let p = Process()
        p.executableURL = binary
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        env["XDG_STATE_HOME"] = state
        env["TUNEUP_DEVICE"] = nil
        p.environment = env
        let out = Pipe(), err = Pipe(), input = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = input
        try p.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let outData = Collector(out.fileHandleForReading)
        let errData = Collector(err.fileHandleForReading)
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        if p.isRunning {
            p.terminate()
            p.waitUntilExit()
            throw CLIError("tuneup \(args.joined(separator: " ")) did not finish in \(timeout) s")
        }
        p.waitUntilExit()
        return Result(status: p.terminationStatus, stdout: outData.text(), stderr: errData.text())
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

    func text() -> String {
        let deadline = Date().addingTimeInterval(5)
        while !done.withLock({ $0 }) && Date() < deadline { usleep(1000) }
        return data.withLock { String(decoding: $0, as: UTF8.self) }
    }

    /// Waits until at least `count` lines arrived; returns them.
    func lines(_ count: Int, timeout: Double = 10) -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let lines = data.withLock { String(decoding: $0, as: UTF8.self) }.split(separator: "\n").map(String.init)
            if lines.count >= count { return lines }
            usleep(5000)
        }
        return data.withLock { String(decoding: $0, as: UTF8.self) }.split(separator: "\n").map(String.init)
    }
}

/// A long-running `tuneup sim headset ...` with its stdin open for control lines.
final class RunningSimulator {
    let process = Process()
    let input = Pipe()
    let output: Collector
    let errors: Collector
    let addresses: [String]

    init(_ args: [String], count: Int = 1) throws {
        process.executableURL = CLI.binary
        process.arguments = ["sim", "headset"] + args
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        output = Collector(out.fileHandleForReading)
        errors = Collector(err.fileHandleForReading)
        addresses = output.lines(count)
        guard addresses.count >= count else {
            process.terminate()
            throw CLIError("simulator printed no address; stderr: \(errors.text())")
        }
    }

    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// Sends `quit` and waits for the exit status.
    func quit() -> Int32 {
        send("quit")
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit { if process.isRunning { process.terminate() } }
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
