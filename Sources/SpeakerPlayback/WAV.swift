import Speaker

/// The canonical 44-byte WAV header (RIFF, `fmt ` PCM, `data`), written by the simulated speaker's recordings; `parse`
/// finds the PCM in a WAV file (the hub's media durations, benchmarks reading recordings).
public enum WAV {
    public static let headerSize = 44

    /// A header for `dataBytes` bytes of PCM in `format`.
    public static func header(format: AudioFormat, dataBytes: UInt32) -> [UInt8] {
        var h: [UInt8] = []
        func u32(_ v: UInt32) { h += withUnsafeBytes(of: v.littleEndian, Array.init) }
        func u16(_ v: UInt16) { h += withUnsafeBytes(of: v.littleEndian, Array.init) }
        h += Array("RIFF".utf8); u32(36 &+ dataBytes); h += Array("WAVE".utf8)
        h += Array("fmt ".utf8); u32(16); u16(1); u16(UInt16(format.channels)); u32(format.sampleRate)
        u32(format.sampleRate * UInt32(format.bytesPerFrame)); u16(UInt16(format.bytesPerFrame))
        u16(UInt16(format.sampleFormat.bytesPerSample * 8))
        h += Array("data".utf8); u32(dataBytes)
        return h
    }

    /// Where the PCM of a WAV file is and what it holds: the chunks are walked (`LIST` and others skipped), PCM
    /// format 1 (or WAVE_FORMAT_EXTENSIBLE with PCM) of 16 or 24 bits is accepted.
    /// - Throws: `SpeakerPlaybackError(.invalidArgument)` naming what is wrong.
    public static func parse(_ head: [UInt8], fileSize: UInt64) throws(SpeakerPlaybackError) -> (format: AudioFormat, dataOffset: UInt64, dataBytes: UInt64) {
        func bad(_ why: String) -> SpeakerPlaybackError { SpeakerPlaybackError(.invalidArgument, "not a playable WAV file: \(why)") }
        func u32(_ i: Int) -> UInt32 { UInt32(head[i]) | UInt32(head[i + 1]) << 8 | UInt32(head[i + 2]) << 16 | UInt32(head[i + 3]) << 24 }
        func u16(_ i: Int) -> UInt16 { UInt16(head[i]) | UInt16(head[i + 1]) << 8 }
        guard head.count >= 12, head[0..<4].elementsEqual("RIFF".utf8), head[8..<12].elementsEqual("WAVE".utf8) else {
            throw bad("no RIFF/WAVE header")
        }
        var offset = 12
        var format: AudioFormat?
        while offset + 8 <= head.count {
            let id = String(decoding: head[offset..<offset + 4], as: UTF8.self)
            let size = Int(u32(offset + 4))
            let body = offset + 8
            if id == "fmt " {
                guard body + 16 <= head.count else { throw bad("truncated fmt chunk") }
                let tag = u16(body), channels = u16(body + 2), rate = u32(body + 4), bits = u16(body + 14)
                let isPCM = tag == 1 || (tag == 0xFFFE && size >= 40 && body + 26 <= head.count && u16(body + 24) == 1)
                guard isPCM else { throw bad("format tag \(tag) is not PCM") }
                let sampleFormat: SampleFormat
                switch bits {
                case 16: sampleFormat = .s16le
                case 24: sampleFormat = .s24le
                default: throw bad("\(bits)-bit samples (16 or 24 are played)")
                }
                guard channels <= 255 else { throw bad("\(channels) channels") }
                do { format = try AudioFormat(sampleRate: rate, channels: UInt8(channels), sampleFormat: sampleFormat) } catch {
                    throw bad(error.message)
                }
            } else if id == "data" {
                guard let format else { throw bad("data before fmt") }
                let available = fileSize > UInt64(body) ? fileSize - UInt64(body) : 0
                let bytes = min(UInt64(size), available)
                return (format, UInt64(body), bytes - bytes % UInt64(format.bytesPerFrame))
            }
            offset = body + size + (size & 1)
        }
        throw bad("no data chunk in the first \(head.count) bytes")
    }
}
