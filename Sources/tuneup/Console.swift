import Dispatch
import Glibc
import Synchronization

/// Everything the CLI writes (stdout, stderr, the progress file) goes through here, with write(2) on one serial
/// queue of its own: no blocking write on the cooperative pool, lines in the order they were written, and a failed
/// write (a full disk, a closed pipe) is recorded for the exit code instead of trapping or killing the process.
/// SIGPIPE is ignored, so a closed pipe is an EPIPE error like any other.
enum Console {
    private static let queue = DispatchQueue(label: "tuneup.console")
    /// The first failed write per file descriptor: its errno.
    private static let failures = Mutex<[Int32: Int32]>([:])

    /// Called once at start-up.
    static func start() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes `text` to standard output.
    static func out(_ text: String) { write(text, to: STDOUT_FILENO) }

    /// Writes `text` to standard error.
    static func err(_ text: String) { write(text, to: STDERR_FILENO) }

    /// Writes `text` to `fd`; after the first failure on `fd`, nothing more is written there.
    static func write(_ text: String, to fd: Int32) {
        queue.async {
            guard failures.withLock({ $0[fd] == nil }) else { return }
            if let e = writeAll(Array(text.utf8), fd) { failures.withLock { $0[fd] = e } }
        }
    }

    /// Waits until everything written so far has reached the kernel (or failed).
    static func flush() { queue.sync {} }

    /// The errno of the first failed write to `fd`, once everything before it has been written.
    static func failure(_ fd: Int32) -> Int32? {
        flush()
        return failures.withLock { $0[fd] }
    }

    /// Whether a write to `fd` has failed so far, without waiting for what is queued (for a loop that stops at its
    /// first failed write: `wearable stream | head -1`).
    static func hasFailed(_ fd: Int32) -> Bool { failures.withLock { $0[fd] != nil } }

    /// Forgets `fd` (a file that was closed; its number may be reused).
    static func forget(_ fd: Int32) {
        flush()
        _ = failures.withLock { $0.removeValue(forKey: fd) }
    }

    /// The first output failure of the process (stdout, then stderr) as a one-line explanation.
    static var outputFailure: String? {
        if let e = failure(STDOUT_FILENO) { return "cannot write to standard output: \(errorText(e))" }
        if let e = failure(STDERR_FILENO) { return "cannot write to standard error: \(errorText(e))" }
        return nil
    }

    static func errorText(_ e: Int32) -> String { String(cString: strerror(e)) }

    /// The width of the terminal on `fd` (TIOCGWINSZ; it changes when the window is resized, so live views ask at
    /// each redraw), else $COLUMNS, else nil.
    static func columns(_ fd: Int32 = STDOUT_FILENO) -> Int? {
        var size = winsize()
        if withUnsafeMutablePointer(to: &size, { ioctl(fd, UInt(TIOCGWINSZ), $0) }) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return getenv("COLUMNS").flatMap { Int(String(cString: $0)) }
    }

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
