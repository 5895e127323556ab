import FirmwareUpdate
import Foundation
import Headset
import Synchronization

/// Shows update progress: a bar on a terminal (stderr), plain lines when stderr is not a terminal, JSON Lines
/// events on stdout with --format json, and the same events appended to --progress-file.
final class ProgressRenderer: Sendable {
    private let json: Bool
    private let bar: Bool
    private let file: FileHandle?
    private let title: String
    private let state = Mutex(State())

    private struct State {
        var lastPhase: UpdatePhase?
        var lastTenth = -1
        var barShown = false
    }

    init(json: Bool, progressFile: String?, title: String) throws {
        self.json = json
        self.title = title
        bar = isatty(STDERR_FILENO) == 1
        if let progressFile {
            if !FileManager.default.fileExists(atPath: progressFile) {
                guard FileManager.default.createFile(atPath: progressFile, contents: nil) else {
                    throw CommandFailure(message: "cannot create the progress file \(progressFile)", code: Exit.localIO)
                }
            }
            guard let handle = FileHandle(forWritingAtPath: progressFile) else {
                throw CommandFailure(message: "cannot open the progress file \(progressFile) for writing", code: Exit.localIO)
            }
            handle.seekToEndOfFile()
            file = handle
        } else {
            file = nil
        }
    }

    func consume(_ events: AsyncStream<UpdateProgress>) async {
        for await event in events { show(event) }
    }

    private func show(_ e: UpdateProgress) {
        if json || file != nil, let line = try? Output.jsonLine(Tagged(type: "progress", progress: e)) {
            if json { Output.line(line) }
            file?.write(Data((line + "\n").utf8))
        }
        if bar {
            let text = "\r" + Self.barLine(e) + "\u{1B}[K"
            FileHandle.standardError.write(Data(text.utf8))
            state.withLock { $0.barShown = true }
        } else if !json {
            // Plain lines: each phase change and every 10 % of the transfer.
            let line: String? = state.withLock { s in
                let tenth = Int(e.fraction * 10)
                defer { s.lastPhase = e.phase; s.lastTenth = max(s.lastTenth, tenth) }
                if e.phase != s.lastPhase || tenth > s.lastTenth { return Self.plainLine(e) }
                return nil
            }
            if let line { FileHandle.standardError.write(Data((line + "\n").utf8)) }
        }
    }

    func finish() {
        if state.withLock({ $0.barShown }) { FileHandle.standardError.write(Data("\n".utf8)) }
        try? file?.close()
    }

    /// With --format json, a failure also ends the stream as an event.
    func emitError(_ error: Error) {
        struct ErrorEvent: Encodable { var type = "error"; var message: String; var code: String? }
        let code = (error as? UpdateError)?.code.rawValue ?? (error as? HeadsetError)?.code.rawValue
        if let line = try? Output.jsonLine(ErrorEvent(message: "\(error)", code: code)) { Output.line(line) }
    }

    static func barLine(_ e: UpdateProgress) -> String {
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

    static func plainLine(_ e: UpdateProgress) -> String {
        var text = "\(String(format: "%3d", Int(e.fraction * 100)))% \(e.phase.rawValue)"
        if e.phase == .erase || e.phase == .write, e.bytesTotal > 0 {
            text += ": \(e.bytesWritten)/\(e.bytesTotal) bytes, \(e.sectorsErased)/\(e.sectorsTotal) sectors erased"
            if let rate = e.bytesPerSecond { text += String(format: ", %.1f KiB/s", rate / 1024) }
        } else if let message = e.message {
            text += ": " + message
        }
        return text
    }

    struct Tagged: Encodable {
        var type: String
        var progress: UpdateProgress
        func encode(to encoder: Encoder) throws {
            try progress.encode(to: encoder)
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(type, forKey: .type)
        }
        enum Key: String, CodingKey { case type }
    }
}
