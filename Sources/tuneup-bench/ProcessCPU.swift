import Foundation

/// CPU time of processes, for the benchmarks' CPU figures.
enum ProcessCPU {
    /// User + system CPU seconds of this process (getrusage: microseconds).
    static func ofThisProcess() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// User + system CPU seconds of process `pid`, ended threads included (/proc/PID/stat fields 14 and 15: 10 ms
    /// ticks). Reads a file: call it off the cooperative pool.
    static func of(_ pid: pid_t) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU seconds of the live threads of process `pid`, to the nanosecond (the first field of
    /// /proc/PID/task/TID/schedstat), for spans shorter than `of`'s ticks; threads that ended are not counted.
    /// Reads files: call it off the cooperative pool.
    static func ofLiveThreads(_ pid: pid_t) -> Double {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var total = 0.0
        for tid in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8),
                  let first = text.split(separator: " ").first, let ns = Double(first) else { continue }
            total += ns / 1e9
        }
        return total
    }
}
