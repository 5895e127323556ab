import CSndfile
import CSoxr
import Speaker

/// Channel mapping (docs/audio-input.md): mono goes to every output channel; fewer output channels than the source
/// has take, each, the mean of the source channels i with i mod out = j (so N → 1 is the mean of all, 4 → 2 puts
/// channels 0 and 2 left, 1 and 3 right); more output channels than a multi-channel source has get the source's
/// channels in order and silence after them.
enum ChannelMap {
    /// Downmixing happens before resampling and upmixing after, so the resampler handles min(in, out) channels.
    enum Stage { case down, up }

    static func map(_ samples: [Double], from n: Int, to m: Int, stage: Stage) -> [Double] {
        switch stage {
        case .down: return m < n ? mix(samples, from: n, to: m) : samples
        case .up: return m > n ? mix(samples, from: n, to: m) : samples
        }
    }

    static func mix(_ samples: [Double], from n: Int, to m: Int) -> [Double] {
        guard n != m, n > 0, m > 0 else { return samples }
        let frames = samples.count / n
        var out = [Double](repeating: 0, count: frames * m)
        if n == 1 {
            for f in 0..<frames {
                let v = samples[f]
                for c in 0..<m { out[f * m + c] = v }
            }
        } else if m < n {
            var counts = [Double](repeating: 0, count: m)
            for i in 0..<n { counts[i % m] += 1 }
            for f in 0..<frames {
                for i in 0..<n { out[f * m + i % m] += samples[f * n + i] }
                for j in 0..<m { out[f * m + j] /= counts[j] }
            }
        } else {
            for f in 0..<frames {
                for i in 0..<n { out[f * m + i] = samples[f * n + i] }
            }
        }
        return out
    }
}

/// Doubles in -1...1 to little-endian PCM: scaled by 2^15 (s16le) or 2^23 (s24le), rounded to nearest (ties to
/// even), clipped. A 16-bit source read as doubles (x = s / 2^15) comes back exactly: no dither, so the same
/// source always gives the same bytes.
enum PCMEncoding {
    static func encode(_ samples: UnsafeBufferPointer<Double>, as format: SampleFormat) -> [UInt8] {
        switch format {
        case .s16le:
            var out = [UInt8](repeating: 0, count: samples.count * 2)
            for (i, x) in samples.enumerated() {
                let v = UInt16(bitPattern: Int16(clamp((x * 32768).rounded(.toNearestOrEven), 32767)))
                out[2 * i] = UInt8(truncatingIfNeeded: v)
                out[2 * i + 1] = UInt8(truncatingIfNeeded: v >> 8)
            }
            return out
        case .s24le:
            var out = [UInt8](repeating: 0, count: samples.count * 3)
            for (i, x) in samples.enumerated() {
                let v = UInt32(bitPattern: Int32(clamp((x * 8_388_608).rounded(.toNearestOrEven), 8_388_607)))
                out[3 * i] = UInt8(truncatingIfNeeded: v)
                out[3 * i + 1] = UInt8(truncatingIfNeeded: v >> 8)
                out[3 * i + 2] = UInt8(truncatingIfNeeded: v >> 16)
            }
            return out
        }
    }

    private static func clamp(_ v: Double, _ top: Double) -> Double {
        v.isNaN ? 0 : min(top, max(-top - 1, v))
    }
}

/// libsoxr, high quality (SOXR_HQ), interleaved doubles, one thread (so results do not depend on scheduling). Its
/// output is aligned with its input (soxr removes its filter's delay); `flush()` drains the tail at the end.
final class Resampler {
    private let soxr: soxr_t
    private let channels: Int
    private let ratio: Double
    private let name: String

    init(from inputRate: Double, to outputRate: Double, channels: Int, name: String) throws(AudioInputError) {
        try AudioLibraries.requireSoxr()
        var error: soxr_error_t?
        var io = soxr_io_spec(SOXR_FLOAT64_I, SOXR_FLOAT64_I)
        var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
        var runtime = soxr_runtime_spec(1)
        guard let soxr = soxr_create(inputRate, outputRate, UInt32(channels), &error, &io, &quality, &runtime), error == nil else {
            throw AudioInputError(.decoderFailed, "\(name): cannot resample \(inputRate) Hz to \(outputRate) Hz: \(error.map { String(cString: $0) } ?? "libsoxr failed")")
        }
        self.soxr = soxr
        self.channels = channels
        self.ratio = outputRate / inputRate
        self.name = name
    }

    deinit { soxr_delete(soxr) }

    /// Resamples interleaved frames; returns what soxr has ready (it keeps some input for its filter).
    func process(_ samples: [Double]) throws(AudioInputError) -> [Double] {
        let frames = samples.count / channels
        var out: [Double] = []
        var consumed = 0
        let capacity = Int((Double(frames) * ratio).rounded(.up)) + 256
        var block = [Double](repeating: 0, count: capacity * channels)
        while consumed < frames {
            var used = 0
            var made = 0
            let error = samples.withUnsafeBufferPointer { input in
                block.withUnsafeMutableBufferPointer { output in
                    soxr_process(soxr, input.baseAddress! + consumed * channels, frames - consumed, &used,
                                 output.baseAddress, capacity, &made)
                }
            }
            if let error { throw AudioInputError(.decoderFailed, "\(name): resampling failed: \(String(cString: error))") }
            out.append(contentsOf: block[0..<(made * channels)])
            consumed += used
            if used == 0 && made == 0 { break }
        }
        return out
    }

    /// The frames soxr still holds, at the end of the input.
    func flush() throws(AudioInputError) -> [Double] {
        var out: [Double] = []
        let capacity = 4096
        var block = [Double](repeating: 0, count: capacity * channels)
        while true {
            var made = 0
            let error = block.withUnsafeMutableBufferPointer { output in
                soxr_process(soxr, nil, 0, nil, output.baseAddress, capacity, &made)
            }
            if let error { throw AudioInputError(.decoderFailed, "\(name): resampling failed: \(String(cString: error))") }
            if made == 0 { return out }
            out.append(contentsOf: block[0..<(made * channels)])
        }
    }
}

/// Names of containers and encodings, and the first bytes of formats that are recognised but not decoded.
enum FormatNames {
    static func container(major: Int32, minor: Int32) -> String? {
        switch major {
        case Int32(SF_FORMAT_WAV), Int32(SF_FORMAT_WAVEX): "WAV"
        case Int32(SF_FORMAT_RF64): "RF64"
        case Int32(SF_FORMAT_W64): "W64"
        case Int32(SF_FORMAT_AIFF): "AIFF"
        case Int32(SF_FORMAT_FLAC): "FLAC"
        case Int32(SF_FORMAT_OGG): "Ogg"
        case Int32(SF_FORMAT_CAF): "CAF"
        case Int32(SF_FORMAT_AU): "AU"
        case Int32(SF_FORMAT_MPEG): minor == Int32(SF_FORMAT_MPEG_LAYER_III) ? "MP3" : "MPEG audio"
        default: nil
        }
    }

    static func encoding(_ minor: Int32) -> String? {
        switch minor {
        case Int32(SF_FORMAT_PCM_S8), Int32(SF_FORMAT_PCM_U8): "8-bit PCM"
        case Int32(SF_FORMAT_PCM_16): "16-bit PCM"
        case Int32(SF_FORMAT_PCM_24): "24-bit PCM"
        case Int32(SF_FORMAT_PCM_32): "32-bit PCM"
        case Int32(SF_FORMAT_FLOAT): "32-bit float"
        case Int32(SF_FORMAT_DOUBLE): "64-bit float"
        case Int32(SF_FORMAT_VORBIS): "Vorbis"
        case Int32(SF_FORMAT_OPUS): "Opus"
        case Int32(SF_FORMAT_MPEG_LAYER_I): "MPEG layer I"
        case Int32(SF_FORMAT_MPEG_LAYER_II): "MPEG layer II"
        case Int32(SF_FORMAT_MPEG_LAYER_III): "MPEG layer III"
        case Int32(SF_FORMAT_ALAC_16), Int32(SF_FORMAT_ALAC_20), Int32(SF_FORMAT_ALAC_24), Int32(SF_FORMAT_ALAC_32): "ALAC"
        default: nil
        }
    }
}

enum FormatSniffer {
    static let supportedList = "WAV, AIFF, FLAC, Ogg Vorbis, Opus, MP3"

    /// A container Tuneup recognises by its first bytes but libsndfile does not decode.
    static func unsupportedContainer(_ head: [UInt8]) -> String? {
        func at(_ offset: Int, _ text: String) -> Bool {
            let bytes = Array(text.utf8)
            return head.count >= offset + bytes.count && Array(head[offset..<(offset + bytes.count)]) == bytes
        }
        if at(4, "ftyp") { return "MPEG-4 audio (M4A: AAC or ALAC)" }
        if head.starts(with: [0x30, 0x26, 0xB2, 0x75, 0x8E, 0x66, 0xCF, 0x11]) { return "ASF (WMA)" }
        if head.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) { return "Matroska/WebM" }
        if head.count >= 2 && head[0] == 0xFF && head[1] & 0xF6 == 0xF0 { return "AAC (ADTS)" }
        if at(0, "MAC ") { return "Monkey's Audio" }
        if at(0, "wvpk") { return "WavPack" }
        if at(0, "MThd") { return "MIDI" }
        if at(0, "#!AMR") { return "AMR" }
        return nil
    }

    /// The container whose magic the bytes start with, among those Tuneup decodes.
    static func knownContainer(_ head: [UInt8]) -> String? {
        func at(_ offset: Int, _ text: String) -> Bool {
            let bytes = Array(text.utf8)
            return head.count >= offset + bytes.count && Array(head[offset..<(offset + bytes.count)]) == bytes
        }
        if at(0, "RIFF") || at(0, "RIFX") || at(0, "RF64") { return "WAV" }
        if at(0, "FORM") { return "AIFF" }
        if at(0, "fLaC") { return "FLAC" }
        if at(0, "OggS") { return "Ogg" }
        if at(0, "ID3") || (head.count >= 2 && head[0] == 0xFF && head[1] & 0xE0 == 0xE0) { return "MP3" }
        return nil
    }

    /// "text" or "an HTML page" when the bytes are printable text (no NUL, no control bytes but tab, CR, LF).
    static func textKind(_ head: [UInt8]) -> String? {
        guard !head.isEmpty, head.allSatisfy({ $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || ($0 >= 0x20 && $0 != 0x7F) }) else { return nil }
        let start = String(decoding: head.prefix(256), as: UTF8.self).lowercased()
        return start.contains("<html") || start.contains("<!doctype html") ? "an HTML page" : "text"
    }
}
