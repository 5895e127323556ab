import Foundation
import Spawn

/// What a child process that did not finish in time was doing: every thread's stack from gdb when it is installed
/// (tools/install-deps.sh installs it), else each thread's name and the kernel function it sleeps in. For the error of
/// a test that gives up on a child, so that a hang seen once on a busy machine says where it was. Blocks (it runs gdb
/// to completion): call it where blocking is allowed, as the child runners do.
public enum HangReport {
    public static func threads(of pid: pid_t) -> String {
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb"),
           let gdb = try? ChildProcess("/usr/bin/gdb", ["-p", "\(pid)", "-batch", "-nx", "-ex", "thread apply all bt 25"],
                                       stdin: .null, stdout: .pipe, stderr: .pipe) {
            if gdb.waitForEnd(upTo: 60) {
                let stacks = (gdb.output?.textBlocking(timeout: 5) ?? "")
                    .split(separator: "\n").filter { $0.hasPrefix("Thread ") || $0.hasPrefix("#") }
                if !stacks.isEmpty { return stacks.joined(separator: "\n") }
            } else {
                gdb.waitUntilExit(within: 0)
            }
        }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }.map { tid -> String in
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8)) ?? "?"
            let wchan = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/wchan", encoding: .utf8)) ?? "?"
            return "thread \(tid) \(name.trimmingCharacters(in: .whitespacesAndNewlines)): in \(wchan)"
        }.joined(separator: "\n")
    }
}
