import Failure
import FirmwareUpdate
import Foundation
import Headset
import Progress
import Synchronization

/// Shows update progress: a bar on a terminal (stderr), plain lines when stderr is not a terminal, JSON Lines
/// events on stdout with --format json, and the same events appended to --progress-file.
public final class ProgressRenderer: Sendable {
    private let json: Bool
    private let bar: Bool
    /// The progress file's descriptor (appending), if any.
    private let file: Int32?
    private let progressFile: String?
    private let title: String
    private let state = Mutex(State())

    private struct State {
        var lastPhase: UpdatePhase?
        var lastTenth = -1
        var barShown = false
        /// The latest event seen (whatever the output mode): where an interrupted update stopped.
        public var latest: UpdateProgress?
    }

    /// Throws `TerminalError` `.progressFile` (exit 74) when the progress file cannot be opened.
    public init(json: Bool, progressFile: String?, title: String) throws(TerminalError) {
        self.json = json
        self.title = title
        self.progressFile = progressFile
        bar = isatty(STDERR_FILENO) == 1
        if let progressFile {
            let fd = open(progressFile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                throw TerminalError(.progressFile, "cannot open the progress file \(progressFile) for writing: \(Console.errorText(errno))")
            }
            file = fd
        } else {
            file = nil
        }
    }

    public func consume(_ events: AsyncStream<UpdateProgress>) async {
        for await event in events { show(event) }
    }

    private func show(_ e: UpdateProgress) {
        state.withLock { $0.latest = e }
        if json || file != nil, let line = try? Output.jsonLine(Tagged(type: "progress", progress: e)) {
            if json { Output.line(line) }
            if let file { Console.write(line + "\n", to: file) }
        }
        if bar {
            // Cut to the terminal's width: a bar line that wrapped would leave a row behind at every update.
            Console.err("\r" + LiveRegion.fit(Self.barLine(e), columns: Console.columns(STDERR_FILENO)) + "\u{1B}[K")
            state.withLock { $0.barShown = true }
        } else if !json {
            // Plain lines: each phase change and every 10 % of the transfer.
            let line: String? = state.withLock { s in
                let tenth = Int(e.fraction * 10)
                defer { s.lastPhase = e.phase; s.lastTenth = max(s.lastTenth, tenth) }
                if e.phase != s.lastPhase || tenth > s.lastTenth { return Self.plainLine(e) }
                return nil
            }
            if let line { Console.err(line + "\n") }
        }
    }

    /// Ends the bar and closes the progress file. Returns why the progress file could not be written, if it could
    /// not (the update itself goes on regardless).
    @discardableResult
    public func finish() -> String? {
        if state.withLock({ $0.barShown }) { Console.err("\n") }
        guard let file, let progressFile else { return nil }
        let failure = Console.failure(file)
        Console.forget(file)
        let closed = close(file) == 0 ? nil : errno
        if let e = failure ?? closed { return "cannot write the progress file \(progressFile): \(Console.errorText(e))" }
        return nil
    }

    /// The latest progress event.
    public var latest: UpdateProgress? { state.withLock { $0.latest } }

    /// With --format json, a failure also ends the stream as an event (and in the progress file).
    public func emitError(message: String, code: String?) {
        struct ErrorEvent: Encodable { var type = "error"; var message: String; var code: String? }
        guard let line = try? Output.jsonLine(ErrorEvent(message: message, code: code)) else { return }
        if json { Output.line(line) }
        if let file { Console.write(line + "\n", to: file) }
    }

    public static func barLine(_ e: UpdateProgress) -> String {
        let width = 28
        let filled = Int(e.fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        var text = "\(bar) \(String(format: "%3d", Int(e.fraction * 100)))% \(e.phase.rawValue)"
        if e.phase == .erase || e.phase == .write, e.bytesTotal > 0 {
            text += " \(e.bytesWritten / 1024)/\(e.bytesTotal / 1024) KiB"
            if let rate = e.bytesPerSecond { text += String(format: " %.1f KiB/s", rate / 1024) }
            if let eta = e.etaSeconds { text += String(format: " ETA %.0fs", eta) }
        } else if let message = e.message {
            text += " – " + message
        }
        return text
    }

    public static func plainLine(_ e: UpdateProgress) -> String {
        var text = "\(String(format: "%3d", Int(e.fraction * 100)))% \(e.phase.rawValue)"
        if e.phase == .erase || e.phase == .write, e.bytesTotal > 0 {
            text += ": \(e.bytesWritten)/\(e.bytesTotal) bytes, \(e.sectorsErased)/\(e.sectorsTotal) sectors erased"
            if let rate = e.bytesPerSecond { text += String(format: ", %.1f KiB/s", rate / 1024) }
        } else if let message = e.message {
            text += ": " + message
        }
        return text
    }

    public struct Tagged: Encodable {
        public init(type: String, progress: UpdateProgress) { (self.type, self.progress) = (type, progress) }
        public var type: String
        public var progress: UpdateProgress
        public func encode(to encoder: Encoder) throws {
            try progress.encode(to: encoder)
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(type, forKey: .type)
        }
        enum Key: String, CodingKey { case type }
    }
}

/// The terminal's own failures.
public typealias TerminalError = CodedFailure<TerminalErrors>

/// The codes of `TerminalError`.
public enum TerminalErrors: ErrorDomain {
    public static func category(of code: TerminalError.Code) -> FailureCategory { .localFile }
}

extension ErrorCodeIn where Domain == TerminalError {
    /// The progress file (`--progress-file`) cannot be opened for appending.
    public static let progressFile = Self(rawValue: "progress-file")
}
