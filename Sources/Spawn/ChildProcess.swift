import CShims
import Failure
import Foundation
import Glibc
import Synchronization

/// A child process started with posix_spawn that inherits nothing but the descriptors it is given (0, 1, 2), and
/// whose end is seen with waitpid.
///
/// Why not Foundation's `Process`: on Linux it learns that a child ended when a socket it hands the child closes,
/// and every descriptor a process opens without close-on-exec leaks into each child spawned meanwhile. When two
/// threads start processes at once (a parallel test run), a long-lived child (a simulator, a database server) can
/// hold another child's socket or output pipe, and that other child looks alive — or its output unfinished — until
/// the long-lived one ends. Here every pipe is close-on-exec, the child closes every descriptor from 3 up before it
/// runs, and the end of a child is its exit status, not the state of a descriptor.
public final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// A pipe to this process (stdin: written with `write(_:)`; stdout/stderr: collected in `output`/`errors`).
        case pipe
        /// /dev/null.
        case null
        /// A file, created or truncated (stdout/stderr) or read (stdin).
        case file(String)
        /// Standard error only: the same place as standard output.
        case stdout
        /// Standard output only: a pipe whose read end the caller takes (`outputDescriptor`; the caller closes it).
        case pipeToCaller
    }

    /// How a child ended.
    public enum Termination: Sendable, Hashable {
        case exit(Int32)
        case signal(Int32)
    }

    public let processIdentifier: pid_t
    /// What the child writes to its stdout, when it is a pipe.
    public let output: OutputCollector?
    /// What the child writes to its stderr, when it is a pipe.
    public let errors: OutputCollector?
    /// The read end of the child's stdout, with `.pipeToCaller`.
    public let outputDescriptor: Int32?
    private let input: Mutex<Int32?>
    private let ended = Mutex<Termination?>(nil)
    private let maxResident = Mutex<Int?>(nil)

    /// Starts `executable ARGUMENTS`. `environment` changes the current environment (nil removes a variable);
    /// `directory` is the child's working directory.
    public init(_ executable: String, _ arguments: [String], environment: [String: String?] = [:], directory: String? = nil,
                stdin: Stream = .null, stdout: Stream = .pipe, stderr: Stream = .pipe) throws(SpawnError) {
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let envp = env.map { "\($0.key)=\($0.value)" }
        let argv = [executable] + arguments

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Our ends of the pipes (closed in the child by close-on-exec), and their ends (closed here after the spawn).
        var ours: [Int32: Int32] = [:]
        var theirs: [Int32] = []
        func cleanUp() { (Array(ours.values) + theirs).forEach { _ = Glibc.close($0) } }

        for (fd, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .pipe, .pipeToCaller:
                var fds: [Int32] = [-1, -1]
                guard tuneup_pipe_cloexec(&fds) == 0 else {
                    let e = errno
                    cleanUp()
                    throw SpawnError(.cannotStart, "cannot create a pipe: \(String(cString: strerror(e)))")
                }
                let (childEnd, ourEnd) = fd == 0 ? (fds[0], fds[1]) : (fds[1], fds[0])
                ours[fd] = ourEnd
                theirs.append(childEnd)
                posix_spawn_file_actions_adddup2(&actions, childEnd, fd)
            case .null:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case let .file(path):
                posix_spawn_file_actions_addopen(&actions, fd, path, fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .stdout:
                posix_spawn_file_actions_adddup2(&actions, 1, fd)
            }
        }
        if let directory { _ = tuneup_spawn_chdir(&actions, directory) }
        _ = tuneup_spawn_closefrom(&actions, 3)

        // The child starts with no signal blocked and every signal at its default action: a signal this process
        // blocks (on the spawning thread) or ignores (SIGPIPE) must not be blocked or ignored in the child.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var pid: pid_t = 0
        let spawned = Self.withCStrings(argv) { cargv in
            Self.withCStrings(envp) { cenvp in posix_spawn(&pid, executable, &actions, &attributes, cargv, cenvp) }
        }
        theirs.forEach { _ = Glibc.close($0) }
        theirs = []
        guard spawned == 0 else {
            cleanUp()
            throw SpawnError(.cannotStart, "cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        processIdentifier = pid
        input = Mutex(ours[0])
        if case .pipeToCaller = stdout {
            outputDescriptor = ours[1]
            output = nil
        } else {
            outputDescriptor = nil
            output = ours[1].map { OutputCollector(fd: $0) }
        }
        errors = ours[2].map { OutputCollector(fd: $0) }
    }

    deinit {
        if isRunning { terminate() }
        if let fd = input.withLock({ $0 }) { _ = Glibc.close(fd) }
    }

    /// Writes `text` to the child's stdin (a pipe); a child that stopped reading makes it a no-op.
    public func write(_ text: String) {
        input.withLock { fd in
            guard let fd else { return }
            let bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// Closes the child's stdin (it reads its end).
    public func closeInput() {
        input.withLock { fd in
            if let open = fd { _ = Glibc.close(open) }
            fd = nil
        }
    }

    /// Sends `signal` unless the child has ended (and been reaped: its pid may be another process's by then).
    public func signal(_ signal: Int32) {
        ended.withLock { end in
            if end == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// SIGTERM.
    public func terminate() { signal(SIGTERM) }
    /// SIGINT.
    public func interrupt() { signal(SIGINT) }

    /// Whether the child still runs (reaps it when it has ended).
    public var isRunning: Bool { termination == nil }

    /// How the child ended; nil while it runs.
    public var termination: Termination? {
        ended.withLock { end in
            if end == nil {
                var status: Int32 = 0
                var usage = rusage()
                var r: pid_t
                repeat { r = wait4(processIdentifier, &status, WNOHANG, &usage) } while r < 0 && errno == EINTR
                if r == processIdentifier {
                    end = status & 0x7F == 0 ? .exit((status >> 8) & 0xFF) : .signal(status & 0x7F)
                    maxResident.withLock { $0 = Int(usage.ru_maxrss) }
                } else if r < 0 {
                    end = .exit(-1)  // Not our child any more (ECHILD): nothing left to wait for.
                }
            }
            return end
        }
    }

    /// The child's peak resident set size in KiB (wait4's `ru_maxrss`) once it has ended and was reaped here; nil
    /// while it runs (or when another waiter reaped it).
    public var peakResidentKilobytes: Int? {
        _ = termination
        return maxResident.withLock { $0 }
    }

    /// Waits (blocking) until the child ends; returns how.
    @discardableResult
    public func waitUntilExit() -> Termination {
        while true {
            if let end = termination { return end }
            // Blocks until the child ends without reaping it (the reaping is `termination`'s, under its lock); a
            // child another thread reaped meanwhile makes it fail at once (ECHILD).
            var info = siginfo_t()
            while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        }
    }

    /// Waits (blocking) at most `seconds` for the child to end; then sends SIGTERM and, if it is still there after
    /// `grace` seconds, SIGKILL. Returns how it ended.
    @discardableResult
    public func waitUntilExit(within seconds: Double, grace: Double = 10) -> Termination {
        if !waitForEnd(upTo: seconds) {
            terminate()
            if !waitForEnd(upTo: grace) { signal(SIGKILL) }
        }
        return waitUntilExit()
    }

    /// Blocks until the child ends or `seconds` pass; true when it ended. The thread sleeps in poll(2) on the child's
    /// pidfd (no polling loop: on a loaded machine hundreds of waits that wake every few milliseconds cost the CPU
    /// the children need); without pidfds (before Linux 5.3) it checks every 2 ms.
    public func waitForEnd(upTo seconds: Double) -> Bool {
        if !isRunning { return true }
        let deadline = ContinuousClock.now + .seconds(max(0, seconds))
        let fd = tuneup_pidfd_open(processIdentifier)
        guard fd >= 0 else {
            while isRunning, ContinuousClock.now < deadline { usleep(2_000) }
            return !isRunning
        }
        defer { _ = Glibc.close(fd) }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while isRunning {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { break }
            let milliseconds = Int32(min(Int64(Int32.max), left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0, errno != EINTR { usleep(2_000) }  // not expected; never spin
        }
        return !isRunning
    }

    /// The exit code, or for a child ended by a signal the signal's number (as Foundation's `Process` reports it).
    /// -1 while it runs.
    public var terminationStatus: Int32 {
        switch termination {
        case let .exit(code)?: return code
        case let .signal(number)?: return number
        case nil: return -1
        }
    }

    /// The exit code, or 128 + the signal's number for a child ended by a signal (as a shell reports it).
    public var shellStatus: Int32 {
        switch termination {
        case let .exit(code)?: return code
        case let .signal(number)?: return 128 + number
        case nil: return -1
        }
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        var pointers = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return pointers.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
    }
}

/// A child process could not be started, or a helper command it ran failed (the coded shape of every module's
/// errors: `CodedFailure`).
public typealias SpawnError = CodedFailure<SpawnErrors>

public enum SpawnErrors: ErrorDomain {
    /// A program that cannot be started, or that fails, is a missing or broken part of this machine: exit 74, as a
    /// missing library is.
    public static func category(of code: SpawnError.Code) -> FailureCategory { .localFile }
}

extension ErrorCodeIn where Domain == SpawnError {
    /// The program could not be started (not there, not executable, no pipe, a directory that does not exist).
    public static let cannotStart = Self(rawValue: "cannot-start")
    /// A helper program ran and failed (its output in the message).
    public static let childFailed = Self(rawValue: "child-failed")
    /// No free local port could be found.
    public static let noPort = Self(rawValue: "no-port")
}

/// Collects everything a descriptor delivers until its end, on a thread of its own, and closes it then. The
/// blocking waits sleep on a condition the reader signals (no polling).
public final class OutputCollector: @unchecked Sendable {
    // `collected` and `finished` change only under `condition`.
    private let condition = NSCondition()
    private var collected = Data()
    private var finished = false

    init(fd: Int32) {
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                locked { $0.collected.append(contentsOf: buffer[..<n]) }
            }
            _ = Glibc.close(fd)
            locked { $0.finished = true }
        }
        thread.start()
    }

    /// Runs `change` under the condition and wakes its waiters.
    private func locked(_ change: (OutputCollector) -> Void) {
        condition.lock()
        change(self)
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until `done` holds (checked under the condition, at every arrival) or `timeout` seconds pass.
    private func wait(timeout: Double, until done: (Data, Bool) -> Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        while !done(collected, finished), condition.wait(until: deadline) {}
        condition.unlock()
    }

    /// Whether the writer closed its end (everything is collected).
    public var isFinished: Bool {
        condition.lock()
        defer { condition.unlock() }
        return finished
    }

    /// What arrived so far.
    public var text: String {
        condition.lock()
        defer { condition.unlock() }
        return String(decoding: collected, as: UTF8.self)
    }

    /// Everything, once the writer closed its end (waits at most `timeout` seconds, then returns what arrived).
    public func textBlocking(timeout: Double = 30) -> String {
        wait(timeout: timeout) { _, finished in finished }
        return text
    }

    /// Waits until at least `count` lines arrived, the writer closed its end, or `timeout` seconds passed; returns
    /// the lines.
    public func linesBlocking(_ count: Int, timeout: Double = 30) -> [String] {
        wait(timeout: timeout) { data, finished in finished || data.split(separator: UInt8(ascii: "\n")).count >= count }
        return text.split(separator: "\n").map(String.init)
    }
}

// Waits from async code: they suspend (polling on the task's clock) and never hold a thread, so tests and tools can
// wait for children on Swift's cooperative pool without blocking it.

/// Suspends until `done()` holds or `seconds` have passed (nil: no limit); false when it gave up (time, or the task
/// was cancelled).
private func poll(every interval: Duration = .milliseconds(2), for seconds: Double? = nil, until done: () -> Bool) async -> Bool {
    let deadline = seconds.map { ContinuousClock.now + .seconds($0) }
    while !done() {
        if let deadline, ContinuousClock.now >= deadline { return false }
        do { try await Task.sleep(for: interval) } catch { return done() }
    }
    return true
}

extension ChildProcess {
    /// Waits until the child ends; returns how. Cancellation stops the wait (the child keeps running): nil then.
    public func exited() async -> Termination? {
        _ = await poll { !isRunning }
        return termination
    }

    /// Waits at most `seconds` for the child to end; then sends SIGTERM and, if it is still there after `grace`
    /// seconds, SIGKILL. Returns how it ended.
    @discardableResult
    public func exited(within seconds: Double, grace: Double = 10) async -> Termination {
        if await !poll(for: seconds, until: { !isRunning }) {
            terminate()
            if await !poll(for: grace, until: { !isRunning }) { signal(SIGKILL) }
        }
        while true {
            if let end = termination { return end }
            try? await Task.sleep(for: .milliseconds(2))  // killed: it ends at once
        }
    }
}

extension OutputCollector {
    /// Everything, once the writer closed its end (waits at most `timeout` seconds, then returns what arrived).
    public func finishedText(timeout: Double = 30) async -> String {
        _ = await poll(for: timeout) { isFinished }
        return text
    }

    /// Waits until at least `count` lines arrived or `timeout` seconds passed; returns the lines.
    public func lines(_ count: Int, timeout: Double = 30) async -> [String] {
        _ = await poll(every: .milliseconds(5), for: timeout) { text.split(separator: "\n").count >= count }
        return text.split(separator: "\n").map(String.init)
    }
}
