import Glibc
import Support
import Synchronization

/// A recording's files (`PATH.jsonl`, `PATH.csv` and with `--split-by-sensor` one CSV per sensor) written as it
/// goes: lines are buffered and written on a `SerialLane` (off the cooperative pool) when 64 KiB are waiting and at
/// least every second (`flush()`, called by a ticker), so a process killed outright loses at most the last second,
/// and memory stays flat however long the recording. The files are opened in place by `SafeOutput`'s rule (a
/// symbolic link's target is written; a device, FIFO, socket or directory is refused). A failed write (a full disk)
/// is kept: nothing more is written, what was written stays (in whole lines: a line cut by the failure is taken
/// off), and the recording is to stop (`failure`).
public final class RecordingWriter: Sendable {
    /// One file: its path and what ends its lines ("\n" for JSON Lines, CRLF for CSV).
    public struct File: Sendable {
        public var path: String
        public var lineEnding: String
        public init(_ path: String, lineEnding: String) { (self.path, self.lineEnding) = (path, lineEnding) }
    }

    public let files: [File]
    private let fds: [Int32]
    private let lane = SerialLane("record")
    private let state: Mutex<State>

    private struct State {
        var buffers: [[UInt8]]
        var waiting = 0
        var failure: OutputFileError?
        var closed = false
    }

    public static let flushSize = 64 * 1024

    private init(files: [File], fds: [Int32]) {
        (self.files, self.fds) = (files, fds)
        state = Mutex(State(buffers: Array(repeating: [], count: files.count)))
    }

    /// Opens (creates or truncates) every file; throws `OutputFileError` before anything is written (every path is
    /// checked before any is opened, so a refused one leaves no empty file behind).
    public static func open(_ files: [File]) async throws(OutputFileError) -> RecordingWriter {
        try await Blocking.perform("record open", unavailable: { OutputFileError(.writeFailed, $0.message) }) { () throws(OutputFileError) in
            for file in files { _ = try SafeOutput.resolve(file.path) }
            var fds: [Int32] = []
            do throws(OutputFileError) {
                for file in files { fds.append(try SafeOutput.openForWriting(file.path)) }
                return RecordingWriter(files: files, fds: fds)
            } catch {
                for fd in fds { Glibc.close(fd) }
                throw error
            }
        }
    }

    /// The first failed write, if any (the recording is to stop).
    public var failure: OutputFileError? { state.withLock { $0.failure } }

    /// Appends one line to file `index` (its line ending added); writes when enough is waiting.
    public func append(_ line: String, to index: Int) {
        let full = state.withLock { s -> Bool in
            guard !s.closed, s.failure == nil else { return false }
            s.buffers[index].append(contentsOf: line.utf8)
            s.buffers[index].append(contentsOf: files[index].lineEnding.utf8)
            s.waiting += line.utf8.count + 2
            return s.waiting >= Self.flushSize
        }
        if full { flush() }
    }

    /// Writes what is waiting (in order, on the lane).
    public func flush() {
        try? lane.submit { [self] in writeWaiting() }
    }

    /// Writes what is waiting, flushes every file to disk and closes them. Returns the first failure, if any.
    public func finish() async -> OutputFileError? {
        flush()
        await lane.flush()
        _ = try? await lane.perform(unavailable: { $0 }) { () throws(SupportError) in
            let (already, failed) = self.state.withLock { s -> (Bool, Bool) in
                defer { s.closed = true }
                return (s.closed, s.failure != nil)
            }
            guard !already else { return }
            for (fd, file) in zip(self.fds, self.files) {
                if !failed, fsync(fd) != 0 { self.fail(OutputFileError(.writeFailed, "cannot write \(file.path): \(String(cString: strerror(errno)))")) }
                Glibc.close(fd)
            }
        }
        return failure
    }

    /// Removes every file (a recording that never began), after `finish`.
    public func remove() async {
        _ = try? await lane.perform(unavailable: { $0 }) { () throws(SupportError) in
            for file in self.files { unlink(file.path) }
        }
    }

    /// On the lane: takes what is waiting (under the lock) and writes it (outside it).
    private func writeWaiting() {
        let buffers = state.withLock { s -> [[UInt8]] in
            guard !s.closed, s.failure == nil else { return [] }
            defer {
                for i in s.buffers.indices { s.buffers[i].removeAll(keepingCapacity: true) }
                s.waiting = 0
            }
            return s.buffers
        }
        do throws(OutputFileError) {
            for (i, bytes) in buffers.enumerated() where !bytes.isEmpty {
                let before = lseek(fds[i], 0, SEEK_CUR)
                do throws(OutputFileError) {
                    try SafeOutput.writeAll(bytes, to: fds[i], path: files[i].path)
                } catch {
                    Self.keepWholeLines(fds[i], from: before, of: bytes)
                    throw error
                }
            }
        } catch {
            fail(error)
        }
    }

    /// After a write that failed part way (a full disk takes what fits): the file ends after the last whole line of
    /// `bytes` that reached it, so that what was written still reads as a recording (a cut last line made `plot` and
    /// `--replay` refuse the whole file).
    static func keepWholeLines(_ fd: Int32, from before: off_t, of bytes: [UInt8]) {
        let now = lseek(fd, 0, SEEK_CUR)
        guard before >= 0, now > before else { return }
        let reached = min(Int(now - before), bytes.count)
        let end = before + off_t(bytes[..<reached].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0)
        _ = ftruncate(fd, end)
        _ = lseek(fd, end, SEEK_SET)
    }

    private func fail(_ error: OutputFileError) {
        state.withLock { s in if s.failure == nil { s.failure = error } }
    }
}
