import CSndfile
import Foundation
import SpeakerHub
import SpeakerHubCore
import TestSupport
import Testing

/// Issue 30 item 17: the media list's titles come from the files' tags (five files all named `song` showed five
/// times "song"), the file's name only without a title tag.
@Suite("Hub media: titles from the tags")
struct HubMediaTagsTests {
    /// Writes one second of 8 kHz mono with libsndfile in `format`, with the tags given.
    static func write(_ path: String, format: Int32, title: String?, artist: String? = nil, album: String? = nil) throws {
        var info = SF_INFO()
        info.samplerate = 8000
        info.channels = 1
        info.format = format
        guard let file = sf_open(path, Int32(SFM_WRITE), &info) else { throw TestFailure("libsndfile cannot write \(path)") }
        if let title { _ = sf_set_string(file, Int32(SF_STR_TITLE), title) }
        if let artist { _ = sf_set_string(file, Int32(SF_STR_ARTIST), artist) }
        if let album { _ = sf_set_string(file, Int32(SF_STR_ALBUM), album) }
        let samples = (0..<8000).map { Double(Int16(truncatingIfNeeded: $0 &* 37)) / 32768 }
        let written = samples.withUnsafeBufferPointer { sf_writef_double(file, $0.baseAddress, 8000) }
        sf_close(file)
        guard written == 8000 else { throw TestFailure("libsndfile wrote \(written) frames to \(path)") }
    }

    @Test func fiveFilesNamedSongShowTheirFiveTitles() async throws {
        let dir = try TemporaryDirectory.make("hub-tags")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files: [(name: String, format: Int32, title: String?, artist: String?, album: String?)] = [
            ("song.flac", Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), "Morning Tune", "The Band", "Days"),
            ("song.wav", Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), "Evening Tune", "Other Band", nil),
            ("song.aiff", Int32(SF_FORMAT_AIFF | SF_FORMAT_PCM_16), "Night Tune", nil, nil),
            ("song.ogg", Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS), "Noon Tune", "Vorbis Band", "Hours"),
            ("song.oga", Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS), "Dawn Tune", nil, nil),
            ("untagged.flac", Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), nil, nil, nil),
        ]
        try await offThePool {
            for f in files { try Self.write(dir + "/" + f.name, format: f.format, title: f.title, artist: f.artist, album: f.album) }
        }
        let items = try await MediaFolder(path: dir).items()
        let byName = Dictionary(uniqueKeysWithValues: items.map { (($0.location as NSString).lastPathComponent, $0) })
        #expect(items.count == files.count)
        for f in files {
            let item = try #require(byName[f.name], "\(f.name) listed")
            #expect(item.title == f.title ?? "untagged", "\(f.name): \(item.title)")
            #expect(item.artist == f.artist ?? "" && item.albumTitle == f.album ?? "", "\(f.name): \(item.artist) / \(item.albumTitle)")
            #expect(item.persistentID == MediaInfo.persistentID(of: f.name))
            #expect(item.duration == 1, "\(f.name): \(item.duration) s")
        }
        // Five titles for the five files named `song`, each its own id.
        let songs = items.filter { ($0.location as NSString).lastPathComponent.hasPrefix("song.") }
        #expect(Set(songs.map(\.title)).count == 5 && Set(songs.map(\.persistentID)).count == 5)
    }
}
