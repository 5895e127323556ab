import Failure
import Foundation
import Glibc

/// What starting a server as a child process (a throwaway database, a broker) needs beside `ChildProcess`.
extension ChildProcess {
    /// Runs `executable ARGUMENTS` to completion (blocking) with standard output and error together in a file of
    /// `outputDirectory` — not a pipe: a program that leaves a daemon behind (`pg_ctl start`) would otherwise leave
    /// the pipe open for the daemon's whole life — and returns that output, trimmed. Throws `SpawnError` naming the
    /// command, how it ended and what it printed when it does not exit 0 (or does not end within `seconds`: it is
    /// then stopped as `waitUntilExit(within:)` stops a child).
    @discardableResult
    public static func runToEnd(_ executable: String, _ arguments: [String], environment: [String: String?] = [:],
                                outputDirectory: String, within seconds: Double? = nil) throws(SpawnError) -> String {
        let name = (executable as NSString).lastPathComponent
        let outputPath = "\(outputDirectory)/\(name)-\(UUID().uuidString).out"
        defer { unlink(outputPath) }
        let child = try ChildProcess(executable, arguments, environment: environment, stdout: .file(outputPath), stderr: .stdout)
        let end = seconds.map { child.waitUntilExit(within: $0) } ?? child.waitUntilExit()
        let output = ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard end == .exit(0) else {
            let how = switch end { case let .exit(code): "exit \(code)"; case let .signal(number): "signal \(number)" }
            throw SpawnError(.childFailed, "\(([executable] + arguments).joined(separator: " ")) failed (\(how)): \(output)")
        }
        return output
    }
}

/// A TCP port on 127.0.0.1 that nobody listens on now (bound to port 0, read back, closed), for a child server to
/// listen on.
public enum LoopbackPort {
    public static func unused() throws(SpawnError) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SpawnError(.noPort, "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { throw SpawnError(.noPort, "bind to 127.0.0.1:0: \(String(cString: strerror(errno)))") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw SpawnError(.noPort, "getsockname: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
