import Glibc
import Support
import Synchronization

/// A recording's two files (`PATH.jsonl`, `PATH.csv`) written as it goes: lines are buffered and written on a
/// `SerialLane` (off the cooperative pool) when 64 KiB are waiting and at least every second (`flush()`, called by a
/// ticker), so a process killed outright loses at most the last second, and memory stays flat however long the
/// recording. The files are opened in place by `SafeOutput`'s rule (a symbolic link's target is written; a device,
/// FIFO, socket or directory is refused). A failed write (a full disk) is kept: nothing more is written, what was
/// written stays, and the recording is to stop (`failure`).
final class RecordingWriter: Sendable {
    let jsonlPath: String
    let csvPath: String
    private let jsonlFD: Int32
    private let csvFD: Int32
    private let lane = SerialLane("record")
    private let state = Mutex(State())

    private struct State {
        var jsonl: [UInt8] = []
        var csv: [UInt8] = []
        var failure: OutputFileError?
        var closed = false
    }

    static let flushSize = 64 * 1024

    private init(jsonlPath: String, csvPath: String, jsonlFD: Int32, csvFD: Int32) {
        (self.jsonlPath, self.csvPath, self.jsonlFD, self.csvFD) = (jsonlPath, csvPath, jsonlFD, csvFD)
    }

    /// Opens (creates or truncates) both files; throws `OutputFileError` before anything is written.
    static func open(base: String) async throws(OutputFileError) -> RecordingWriter {
        let jsonl = base + ".jsonl", csv = base + ".csv"
        return try await Blocking.perform("record open", unavailable: { OutputFileError(.writeFailed, $0.message) }) { () throws(OutputFileError) in
            // Both are checked before either is opened: a refused CSV path leaves no empty JSONL behind.
            for file in [jsonl, csv] { _ = try SafeOutput.resolve(file) }
            let a = try SafeOutput.openForWriting(jsonl)
            do throws(OutputFileError) {
                let b = try SafeOutput.openForWriting(csv)
                return RecordingWriter(jsonlPath: jsonl, csvPath: csv, jsonlFD: a, csvFD: b)
            } catch {
                Glibc.close(a)
                throw error
            }
        }
    }

    /// The first failed write, if any (the recording is to stop).
    var failure: OutputFileError? { state.withLock { $0.failure } }

    /// Appends one JSON line and one CSV row (either may be nil); writes when enough is waiting.
    func append(jsonl line: String?, csv row: String?) {
        let full = state.withLock { s -> Bool in
            guard !s.closed, s.failure == nil else { return false }
            if let line {
                s.jsonl.append(contentsOf: line.utf8)
                s.jsonl.append(0x0A)
            }
            if let row {
                s.csv.append(contentsOf: row.utf8)
                s.csv.append(contentsOf: CSV.lineEnding.utf8)
            }
            return s.jsonl.count + s.csv.count >= Self.flushSize
        }
        if full { flush() }
    }

    /// Writes what is waiting (in order, on the lane).
    func flush() {
        try? lane.submit { [self] in writeWaiting() }
    }

    /// Writes what is waiting, flushes both files to disk and closes them. Returns the first failure, if any.
    func finish() async -> OutputFileError? {
        flush()
        await lane.flush()
        _ = try? await lane.perform(unavailable: { $0 }) { () throws(SupportError) in
            let (already, failed) = self.state.withLock { s -> (Bool, Bool) in
                defer { s.closed = true }
                return (s.closed, s.failure != nil)
            }
            guard !already else { return }
            for (fd, path) in [(self.jsonlFD, self.jsonlPath), (self.csvFD, self.csvPath)] {
                if !failed, fsync(fd) != 0 { self.fail(OutputFileError(.writeFailed, "cannot write \(path): \(Console.errorText(errno))")) }
                Glibc.close(fd)
            }
        }
        return failure
    }

    /// Removes both files (a recording that never began), after `finish`.
    func remove() async {
        _ = try? await lane.perform(unavailable: { $0 }) { () throws(SupportError) in
            unlink(self.jsonlPath)
            unlink(self.csvPath)
        }
    }

    /// On the lane: takes what is waiting (under the lock) and writes it (outside it).
    private func writeWaiting() {
        let (jsonl, csv) = state.withLock { s -> ([UInt8], [UInt8]) in
            guard !s.closed, s.failure == nil else { return ([], []) }
            defer { s.jsonl.removeAll(keepingCapacity: true); s.csv.removeAll(keepingCapacity: true) }
            return (s.jsonl, s.csv)
        }
        do throws(OutputFileError) {
            if !jsonl.isEmpty { try SafeOutput.writeAll(jsonl, to: jsonlFD, path: jsonlPath) }
            if !csv.isEmpty { try SafeOutput.writeAll(csv, to: csvFD, path: csvPath) }
        } catch {
            fail(error)
        }
    }

    private func fail(_ error: OutputFileError) {
        state.withLock { s in if s.failure == nil { s.failure = error } }
    }
}
