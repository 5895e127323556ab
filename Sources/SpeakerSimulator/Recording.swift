import Foundation
import Speaker
import SpeakerSession
import Support

/// Writes what a simulated speaker played to a WAV file as it plays, on a serial lane of the blocking executor (never
/// on the cooperative pool); the sizes in the header are set when it is closed.
final class WAVRecorder: Sendable {
    let path: String
    private let queue = SerialLane("speaker recording")
    private nonisolated(unsafe) var handle: FileHandle?  // touched on `queue` only (one job at a time)
    private nonisolated(unsafe) var bytes: UInt64 = 0
    private let format: AudioFormat

    init(path: String, format: AudioFormat) {
        self.path = path
        self.format = format
        try? queue.submit { [self] in
            guard FileManager.default.createFile(atPath: path, contents: Data(WAV.header(format: format, dataBytes: 0))) else {
                // The simulator goes on playing; the missing recording is said once, where its operator reads.
                FileHandle.standardError.write(Data("tuneup: cannot create the recording \(path); this stream is not recorded\n".utf8))
                return
            }
            handle = FileHandle(forWritingAtPath: path)
            _ = try? handle?.seekToEnd()
        }
    }

    func append(_ pcm: [UInt8]) {
        guard !pcm.isEmpty else { return }
        try? queue.submit { [self] in
            guard let handle else { return }
            do {
                try handle.write(contentsOf: pcm)
                bytes += UInt64(pcm.count)
            } catch {
                try? handle.close()
                self.handle = nil
            }
        }
    }

    /// Sets the header's sizes, closes the file, and writes `log` next to it (`.render.log`).
    func close(log: String?) {
        try? queue.submit { [self] in
            if let handle {
                try? handle.seek(toOffset: 0)
                try? handle.write(contentsOf: WAV.header(format: format, dataBytes: UInt32(truncatingIfNeeded: bytes)))
                try? handle.close()
                self.handle = nil
            }
            if let log {
                let logPath = (path.hasSuffix(".wav") ? String(path.dropLast(4)) : path) + ".render.log"
                try? log.write(toFile: logPath, atomically: true, encoding: .utf8)
            }
        }
    }

    /// Waits until everything so far is written.
    func flush() async {
        await queue.flush()
    }
}
