import Foundation
import Simulator
import Support
import Synchronization

/// The settings of a simulation's speakers in one JSON file (`{"speakers": {"0": {...}, ...}}`), by speaker index.
/// Writes go through one serial lane of the blocking executor (off the cooperative pool), atomically (temporary file
/// and rename); `flush()` waits for them.
public final class SpeakerStateFile: Sendable {
    public let path: String
    private let settings: Mutex<[String: SpeakerSettings]>
    private let queue = SerialLane("speaker state")

    private struct Contents: Codable {
        var speakers: [String: SpeakerSettings]
    }

    /// Opens (or starts) the file at `path`.
    /// - Throws: `SimulatorError(.corruptState or .io)` naming the file when it cannot be read or is not a speaker state file.
    public init(path: String) throws(SimulatorError) {
        self.path = path
        var loaded: [String: SpeakerSettings] = [:]
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw SimulatorError(.io, "the speaker state file \(path) is a directory; name a file (e.g. \(path)/speakers.json)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            var parentIsDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &parentIsDirectory), parentIsDirectory.boolValue else {
                throw SimulatorError(.io, "cannot use the speaker state file \(path): its directory \(directory) does not exist")
            }
        }
        if FileManager.default.fileExists(atPath: path) {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                loaded = try JSONDecoder().decode(Contents.self, from: data).speakers
            } catch is DecodingError {
                throw SimulatorError(.corruptState, "\(path) is not a speaker state file (expected {\"speakers\": {...}})")
            } catch {
                throw SimulatorError(.io, "cannot read the speaker state file \(path) (permissions?)")
            }
        }
        settings = Mutex(loaded)
    }

    /// Opens the file as `init(path:)` does, reading it on the blocking executor (not the cooperative pool).
    public static func open(path: String) async throws(SimulatorError) -> SpeakerStateFile {
        try await Blocking.perform("speaker state open", unavailable: { SimulatorError(.io, $0.message) }) {
            () throws(SimulatorError) -> SpeakerStateFile in try SpeakerStateFile(path: path)
        }
    }

    /// The saved settings of speaker `index` (nil when none, or when they are not valid).
    public func settings(of index: Int) -> SpeakerSettings? {
        settings.withLock { $0[String(index)] }.flatMap { $0.isValid ? $0 : nil }
    }

    /// Saves speaker `index`'s settings (written in the background, in order).
    public func save(_ value: SpeakerSettings, of index: Int) {
        let snapshot = settings.withLock { s -> [String: SpeakerSettings] in
            s[String(index)] = value
            return s
        }
        let path = self.path
        try? queue.submit {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            guard let data = try? encoder.encode(Contents(speakers: snapshot)) else { return }
            try? data.write(to: URL(fileURLWithPath: path), options: .atomic)
        }
    }

    /// Waits until every save so far is on disk.
    public func flush() async {
        await queue.flush()
    }
}
