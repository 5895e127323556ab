import Glibc
import Support
import Synchronization

/// A recording's files (`PATH.jsonl`, `PATH.csv` and with `--split-by-sensor` one CSV per sensor) written as it
/// goes: lines are buffered and written on a `SerialLane` (off the cooperative pool) when 64 KiB are waiting and at
/// least every second (`flush()`, called by a ticker), so a process killed outright loses at most the last second,
/// and memory stays flat however long the recording. The files follow `SafeOutput`: every path is checked
/// before any file is made (a symbolic link, device, FIFO, socket or directory is refused, and an existing file unless
/// it may be replaced), each is written under a temporary name in its directory and given its name by `commit()`, when
/// the recording really starts; until then nothing that exists is touched (`remove()` drops the temporary files of a
/// recording that never started). A failed write (a full disk)
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
    private let staged: [SafeOutput.Staged]
    private let existing: SafeOutput.Existing
    private var fds: [Int32] { staged.map(\.fd) }
    private let lane = SerialLane("record")
    private let state: Mutex<State>

    private struct State {
        var buffers: [[UInt8]]
        var waiting = 0
        var failure: OutputFileError?
        var closed = false
        /// The files have their names (`commit`).
        var committed = false
        /// The temporary files were removed (`remove`).
        var removed = false
    }

    public static let flushSize = 64 * 1024

    private init(files: [File], staged: [SafeOutput.Staged], existing: SafeOutput.Existing) {
        (self.files, self.staged, self.existing) = (files, staged, existing)
        state = Mutex(State(buffers: Array(repeating: [], count: files.count)))
    }

    /// Checks every path, then creates every file under its temporary name; throws `OutputFileError` before any file
    /// is made (a refused path leaves nothing behind, and nothing that exists is touched). `existing`: what to do with
    /// a file already at a path (`.refuse`: one line naming it; `.replace`: replaced at `commit`).
    public static func open(_ files: [File], existing: SafeOutput.Existing = .refuse) async throws(OutputFileError) -> RecordingWriter {
        try await Blocking.perform("record open", unavailable: { OutputFileError(.writeFailed, $0.message) }) { () throws(OutputFileError) in
            var modes: [mode_t?] = []
            for file in files { modes.append(try SafeOutput.check(file.path, existing: existing)) }
            var staged: [SafeOutput.Staged] = []
            do throws(OutputFileError) {
                for (file, mode) in zip(files, modes) { staged.append(try SafeOutput.stage(file.path, replacing: mode)) }
                return RecordingWriter(files: files, staged: staged, existing: existing)
            } catch {
                for s in staged { SafeOutput.discard(s) }
                throw error
            }
        }
    }

    /// Whether the files have their names.
    public var committed: Bool { state.withLock { $0.committed } }

    /// Gives every file its name (the recording started), on the lane, once: a failure (a file that appeared since
    /// the check) is the writer's failure, and the recording is to stop.
    public func commit() {
        try? lane.submit { [self] in
            let go = state.withLock { s -> Bool in
                guard !s.committed, !s.removed else { return false }
                s.committed = true
                return true
            }
            guard go else { return }
            do throws(OutputFileError) {
                for file in staged { try SafeOutput.commit(file, existing: existing) }
            } catch {
                fail(error)
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

    /// Removes the temporary files of a recording that never began (not committed), after `finish`: nothing that
    /// existed before is touched. Files that have their names are kept.
    public func remove() async {
        _ = try? await lane.perform(unavailable: { $0 }) { () throws(SupportError) in
            let (committed, already) = self.state.withLock { s -> (Bool, Bool) in
                defer { s.removed = true }
                return (s.committed, s.removed)
            }
            // A commit that failed part way named some: the temporary files of the rest go.
            for file in self.staged where !already {
                var info = stat()
                if !committed || lstat(file.temporary, &info) == 0 { SafeOutput.discard(file, close: false) }
            }
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
