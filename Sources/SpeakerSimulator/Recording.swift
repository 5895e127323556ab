import Foundation
import Speaker
import SpeakerPlayback
import Support

/// Where a simulated speaker's recordings go (`tuneup sim speaker --record DIR`).
public enum Recording {
    /// The WAV file of part `part` of stream `stream` on speaker `speaker`: `speaker-K-stream-S.wav`, and
    /// `speaker-K-stream-S-part-N.wav` for each time the speaker joins the same stream again (after a lost link or an
    /// outage), so what it played before is kept. Its render log is the same name with `.render.log`.
    public static func fileName(speaker: Int, stream: UInt32, part: Int = 1) -> String {
        "speaker-\(speaker)-stream-\(stream)" + (part > 1 ? "-part-\(part)" : "") + ".wav"
    }
}

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
            // Written as it plays, to a new file that takes the name at once (a regular file there is replaced, its
            // permission bits kept); a symbolic link, device, FIFO, socket or directory in the way is refused
            // (SafeOutput's one rule).
            let reason: String
            do {
                let file = FileHandle(fileDescriptor: try SafeOutput.openForWriting(path), closeOnDealloc: true)
                try file.write(contentsOf: WAV.header(format: format, dataBytes: 0))
                handle = file
                return
            } catch let error as OutputFileError {
                reason = error.message
            } catch {
                reason = "cannot write \(path): \(error.localizedDescription)"
            }
            // The simulator goes on playing; the missing recording is said once, where its operator reads.
            FileHandle.standardError.write(Data("tuneup: \(reason); this stream is not recorded\n".utf8))
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
                try? SafeOutput.write(log, to: logPath)
            }
        }
    }

    /// Waits until everything so far is written.
    func flush() async {
        await queue.flush()
    }
}
