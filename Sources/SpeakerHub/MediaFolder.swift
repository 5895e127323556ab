import AudioInput
import Support
import Foundation
import SpeakerHubCore
import SpeakerPlayback
import Transport

/// The hub's media list: the audio files directly in a folder (by extension), sorted by name, each with a
/// PersistentID derived from its name (stable across restarts), its title, artist and album from its tags (a WAV
/// INFO chunk; FLAC and Ogg Vorbis comments, ID3, AIFF's as libsndfile reads them) or else the title from the file's
/// name without its extension, and its duration as the player would play it (a WAV file's data; other formats' length as
/// libsndfile reads it from their header; 0 when unknown). The folder is read again on every
/// request, on the blocking pool, so files added or removed show at once.
public struct MediaFolder: HubMediaSource {
    public let path: String

    public static let extensions: Set<String> = ["wav", "wave", "mp3", "flac", "ogg", "oga", "opus", "aif", "aiff", "m4a", "aac"]

    /// - Throws: `HubError(.mediaUnreadable)` when `path` is not a readable folder.
    public init(path: String) throws(HubError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw HubError(.mediaUnreadable, "media folder '\(path)' does not exist or is not a folder")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw HubError(.mediaUnreadable, "media folder '\(path)' cannot be read")
        }
        self.path = path
    }

    public func items() async throws -> [HubMediaItem] {
        let path = self.path
        let result = try await Blocking.run("hub media") { () -> Result<[HubMediaItem], HubError> in
            Result { () throws(HubError) in try Self.scan(path) }
        }
        return try result.get()
    }

    static func scan(_ path: String) throws(HubError) -> [HubMediaItem] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw HubError(.mediaUnreadable, "media folder '\(path)' cannot be listed: \(error.localizedDescription)")
        }
        var items: [HubMediaItem] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            let ext = (name as NSString).pathExtension.lowercased()
            guard extensions.contains(ext) else { continue }
            let full = (path as NSString).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            var head: [UInt8] = []
            if let handle = FileHandle(forReadingAtPath: full) {
                head = ((try? handle.read(upToCount: MediaInfo.headerLength)) ?? nil).map { Array($0) } ?? []
                try? handle.close()
            }
            var info = MediaInfo.read(head)
            // The duration is what the player would play: the one WAV reader of the project (SpeakerPlayback's).
            let size = ((try? FileManager.default.attributesOfItem(atPath: full))?[.size] as? NSNumber)?.uint64Value ?? 0
            let wav = try? WAV.parse(head, fileSize: size)
            // Other formats (FLAC, MP3, Ogg, AIFF...): their length and tags (Vorbis comments, ID3, AIFF's) as
            // libsndfile reads them from the header; a WAV file without an INFO chunk ahead of its data too (its tags
            // may be elsewhere: libsndfile reads a `LIST` chunk after the data).
            let described = wav == nil || info == MediaInfo() ? try? AudioInput.describeFile(full) : nil
            if info == MediaInfo(), let tags = described?.tags {
                info = MediaInfo(title: tags.title, artist: tags.artist, album: tags.album)
            }
            let duration: Int
            if let wav {
                duration = Int(wav.dataBytes / UInt64(wav.format.bytesPerFrame) / UInt64(wav.format.sampleRate))
            } else if let length = described?.duration {
                duration = Int(length.components.seconds)
            } else {
                duration = 0
            }
            // Files with the same title stay apart: the list is keyed by the PersistentID (of the file's name).
            items.append(HubMediaItem(
                persistentID: MediaInfo.persistentID(of: name), title: info.title ?? (name as NSString).deletingPathExtension,
                artist: info.artist ?? "", albumTitle: info.album ?? "", duration: duration, location: full))
        }
        return items
    }
}
