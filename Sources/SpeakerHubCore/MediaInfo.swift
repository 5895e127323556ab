/// The tags the media list shows of a file, read from its first bytes (docs/hub.md §5): for RIFF/WAVE, the title,
/// artist and album from a `LIST`/`INFO` chunk (INAM, IART, IPRD) ahead of the data. Anything else gives no tags.
/// (The duration is the player's business: `WAV.parse` of SpeakerPlayback.) Pure and total: any bytes give an
/// answer, never a trap.
public struct MediaInfo: Sendable, Equatable {
    public var title: String?
    public var artist: String?
    public var album: String?

    public init(title: String? = nil, artist: String? = nil, album: String? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
    }

    /// How many bytes of a file `read(_:)` looks at.
    public static let headerLength = 65_536

    public static func read(_ bytes: [UInt8]) -> MediaInfo {
        var info = MediaInfo()
        guard bytes.count >= 12, ascii(bytes, 0) == "RIFF", ascii(bytes, 8) == "WAVE" else { return info }
        var offset = 12
        while offset + 8 <= bytes.count {
            let id = ascii(bytes, offset)
            let size = Int(u32(bytes, offset + 4))
            let body = offset + 8
            switch id {
            case "LIST":
                if body + 4 <= bytes.count, ascii(bytes, body) == "INFO" { readInfo(bytes, from: body + 4, to: min(bytes.count, body + size), into: &info) }
            case "data":
                return info
            default:
                break
            }
            // Chunks are padded to even sizes.
            let next = body.addingReportingOverflow(size + (size & 1))
            guard !next.overflow, next.partialValue > offset else { break }
            offset = next.partialValue
        }
        return info
    }

    static func readInfo(_ bytes: [UInt8], from start: Int, to end: Int, into info: inout MediaInfo) {
        var offset = start
        while offset + 8 <= end {
            let id = ascii(bytes, offset)
            let size = Int(u32(bytes, offset + 4))
            let body = offset + 8
            guard body + size <= end else { return }
            let text = String(decoding: bytes[body..<(body + size)].prefix { $0 != 0 }, as: UTF8.self)
            if !text.isEmpty {
                switch id {
                case "INAM": info.title = text
                case "IART": info.artist = text
                case "IPRD": info.album = text
                default: break
                }
            }
            offset = body + size + (size & 1)
        }
    }

    static func ascii(_ b: [UInt8], _ at: Int) -> String {
        guard at >= 0, at + 4 <= b.count else { return "" }
        return String(decoding: b[at..<(at + 4)], as: UTF8.self)
    }

    static func u32(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }

    /// The PersistentID of a file: FNV-1a (64-bit) of its path relative to the media folder, so it stays the same
    /// across restarts and rescans and differs between files.
    public static func persistentID(of relativePath: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in relativePath.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
