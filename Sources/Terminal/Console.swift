import Dispatch
import Glibc
import Support
import Synchronization

/// Everything a tool writes (stdout, stderr, a progress file) goes through here, with write(2) on one `SerialLane` of
/// the project's blocking executor: no blocking write on the cooperative pool, lines in the order they were written,
/// and a failed write (a full disk, a closed pipe) is recorded for the exit code instead of trapping or killing the
/// process. SIGPIPE is ignored, so a closed pipe is an EPIPE error like any other.
public enum Console {
    private static let lane = SerialLane("console")
    /// The first failed write per file descriptor: its errno.
    private static let failures = Mutex<[Int32: Int32]>([:])

    /// Called once at start-up.
    public static func start() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes `text` to standard output.
    public static func out(_ text: String) { write(text, to: STDOUT_FILENO) }

    /// Writes `text` to standard error.
    public static func err(_ text: String) { write(text, to: STDERR_FILENO) }

    /// Writes `text` to `fd`; after the first failure on `fd`, nothing more is written there.
    public static func write(_ text: String, to fd: Int32) {
        let job: @Sendable () -> Void = {
            guard failures.withLock({ $0[fd] == nil }) else { return }
            if let e = writeAll(Array(text.utf8), fd) { failures.withLock { $0[fd] = e } }
        }
        // No thread left to run the lane (the system refused one): written here, in order all the same.
        do { try lane.submit(job) } catch { flush(); job() }
    }

    /// Waits until everything written so far has reached the kernel (or failed). Called where a tool ends (and
    /// where a file is closed): the calling thread waits, as for any last write.
    public static func flush() {
        let done = DispatchSemaphore(value: 0)
        do { try lane.submit { done.signal() } } catch { return }
        done.wait()
    }

    /// The errno of the first failed write to `fd`, once everything before it has been written.
    public static func failure(_ fd: Int32) -> Int32? {
        flush()
        return failures.withLock { $0[fd] }
    }

    /// Whether a write to `fd` has failed so far, without waiting for what is queued (for a loop that stops at its
    /// first failed write: `wearable stream | head -1`).
    public static func hasFailed(_ fd: Int32) -> Bool { failures.withLock { $0[fd] != nil } }

    /// Forgets `fd` (a file that was closed; its number may be reused).
    public static func forget(_ fd: Int32) {
        flush()
        _ = failures.withLock { $0.removeValue(forKey: fd) }
    }

    /// The first output failure of the process (stdout, then stderr) as a one-line explanation.
    public static var outputFailure: String? {
        if let e = failure(STDOUT_FILENO) { return "cannot write to standard output: \(errorText(e))" }
        if let e = failure(STDERR_FILENO) { return "cannot write to standard error: \(errorText(e))" }
        return nil
    }

    public static func errorText(_ e: Int32) -> String { String(cString: strerror(e)) }

    /// The width of the terminal on `fd` (it changes when the window is resized, so live views ask at each redraw),
    /// else $COLUMNS, else nil.
    public static func columns(_ fd: Int32 = STDOUT_FILENO) -> Int? { TerminalSize.of(fd).columns }

    /// write(2) until every byte is written; the errno of a failure, or nil.
    private static func writeAll(_ bytes: [UInt8], _ fd: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += n
        }
        return nil
    }
}

/// A terminal's size in character cells; nil where it is unknown (not a terminal, no $COLUMNS / $LINES).
public struct TerminalSize: Sendable, Hashable {
    public var columns: Int?
    public var rows: Int?

    public init(columns: Int?, rows: Int?) {
        (self.columns, self.rows) = (columns, rows)
    }

    /// The size of the terminal on `fd` (TIOCGWINSZ), each unknown dimension from $COLUMNS / $LINES.
    public static func of(_ fd: Int32 = STDOUT_FILENO) -> TerminalSize {
        var size = winsize()
        let known = withUnsafeMutablePointer(to: &size, { ioctl(fd, UInt(TIOCGWINSZ), $0) }) == 0
        func environment(_ name: String) -> Int? { getenv(name).flatMap { Int(String(cString: $0)) } }
        return TerminalSize(columns: known && size.ws_col > 0 ? Int(size.ws_col) : environment("COLUMNS"),
                            rows: known && size.ws_row > 0 ? Int(size.ws_row) : environment("LINES"))
    }

    /// Whether `fd` is a terminal.
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }
}
