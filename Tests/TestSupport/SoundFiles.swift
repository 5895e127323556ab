import CSndfile

/// Audio files written at test time by libsndfile itself, with known content (FLAC, MP3, Ogg, AIFF, WAV, ...).
public enum SoundFiles {
    /// MPEG layer III (MP3), for `write`'s `format`.
    public static let mp3 = Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III)

    /// Writes interleaved 16-bit samples with libsndfile in `format` (`SF_FORMAT_*` major | minor); `title` goes in
    /// the title tag. Blocking file I/O: call it off the cooperative pool or in a test's set-up.
    public static func write(_ path: String, format: Int32, rate: Int, channels: Int, samples: [Int16], title: String? = nil) throws {
        var info = SF_INFO()
        info.samplerate = Int32(rate)
        info.channels = Int32(channels)
        info.format = format
        guard let file = sf_open(path, Int32(SFM_WRITE), &info) else {
            throw TestFailure("libsndfile cannot write \(path): \(String(cString: sf_strerror(nil)))")
        }
        if let title { _ = sf_set_string(file, Int32(SF_STR_TITLE), title) }
        let frames = samples.count / channels
        let written: Int64
        if format & Int32(SF_FORMAT_SUBMASK) >= Int32(SF_FORMAT_VORBIS) {
            // The lossy encoders take doubles: libsndfile 1.2.0's MP3 encoder garbles large sf_writef_short writes.
            let doubles = samples.map { Double($0) / 32768 }
            written = doubles.withUnsafeBufferPointer { sf_writef_double(file, $0.baseAddress, Int64(frames)) }
        } else {
            written = samples.withUnsafeBufferPointer { sf_writef_short(file, $0.baseAddress, Int64(frames)) }
        }
        sf_close(file)
        guard written == frames else { throw TestFailure("libsndfile wrote \(written) of \(frames) frames to \(path)") }
    }
}
