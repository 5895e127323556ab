import AudioInput
import CSndfile
import Foundation
import Speaker
import TestSupport

/// Audio files written at test time by libsndfile itself, with known content.
enum Fixtures {
    /// nil when the two sample arrays are equal, else where they first differ. Compare large arrays with this, not
    /// with `#expect(a == b)`: on a mismatch swift-testing diffs the two collections (Myers, on the cooperative pool),
    /// which for a million samples stalls every test of the run.
    static func difference<T: Equatable>(_ a: [T], _ b: [T]) -> String? {
        guard a != b else { return nil }
        let first = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        let shown = { (x: [T]) in first < x.count ? "\(x[first])" : "(end)" }
        return "\(a.count) vs \(b.count) samples, first difference at \(first): \(shown(a)) vs \(shown(b))"
    }

    /// A fresh directory under the test process's temporary root.
    static func directory() throws -> String {
        try TemporaryDirectory.make("audio-input")
    }

    /// The container formats the issue names, with the major/minor format libsndfile writes them in.
    static let formats: [(name: String, ext: String, format: Int32, lossless: Bool)] = [
        ("WAV", "wav", Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), true),
        ("AIFF", "aiff", Int32(SF_FORMAT_AIFF | SF_FORMAT_PCM_16), true),
        ("FLAC", "flac", Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), true),
        ("Ogg", "ogg", Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS), false),
        ("Ogg", "opus", Int32(SF_FORMAT_OGG | SF_FORMAT_OPUS), false),
        ("MP3", "mp3", Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III), false),
    ]

    /// A two-channel test signal: 440 Hz at half scale left, 660 Hz at 0.3 right, as 16-bit samples.
    static func music(frames: Int, rate: Int) -> [Int16] {
        var out = [Int16](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let t = Double(i) / Double(rate)
            out[2 * i] = Int16((0.5 * sin(2 * .pi * 440 * t) * 32767).rounded())
            out[2 * i + 1] = Int16((0.3 * sin(2 * .pi * 660 * t) * 32767).rounded())
        }
        return out
    }

    /// Writes interleaved 16-bit samples with libsndfile; `title` goes in the title tag.
    static func write(_ path: String, format: Int32, rate: Int, channels: Int, samples: [Int16], title: String? = nil) throws {
        try SoundFiles.write(path, format: format, rate: rate, channels: channels, samples: samples, title: title)
    }

    /// Writes interleaved 32-bit integer samples (left-aligned) as 24-bit PCM.
    static func write24(_ path: String, format: Int32, rate: Int, channels: Int, samples: [Int32]) throws {
        var info = SF_INFO()
        info.samplerate = Int32(rate)
        info.channels = Int32(channels)
        info.format = format
        guard let file = sf_open(path, Int32(SFM_WRITE), &info) else { throw TestFailure("cannot write \(path)") }
        let frames = samples.count / channels
        _ = samples.withUnsafeBufferPointer { sf_writef_int(file, $0.baseAddress, Int64(frames)) }
        sf_close(file)
    }

    static func format(rate: Int, channels: Int, _ sample: SampleFormat = .s16le) -> AudioFormat {
        try! AudioFormat(sampleRate: UInt32(rate), channels: UInt8(channels), sampleFormat: sample)
    }

    /// Every chunk of the stream, then closes it.
    static func readAll(_ stream: AudioStream, maxFrames: Int = 4096) async throws -> [Int32] {
        var samples: [Int32] = []
        var expected: UInt64 = 0
        while let chunk = try await stream.next(maxFrames: maxFrames) {
            guard chunk.firstFrame == expected, chunk.frameCount > 0, chunk.frameCount <= maxFrames else {
                throw TestFailure("chunk at \(chunk.firstFrame) with \(chunk.frameCount) frames, expected one at \(expected)")
            }
            expected += UInt64(chunk.frameCount)
            samples += chunk.samples
        }
        await stream.close()
        return samples
    }

    /// The code of the error `open` throws (nil when it opens), checking it is one line naming the source.
    /// Reads `stream` to its end or its failure: the samples read before it, and the failure (nil at a clean end).
    static func readUntilEnd(_ stream: AudioStream) async -> (samples: [Int32], frames: Int, failure: AudioInputError?) {
        var samples: [Int32] = []
        var frames = 0
        do throws(AudioInputError) {
            while let chunk = try await stream.next() {
                samples += chunk.samples
                frames += chunk.frameCount
            }
            return (samples, frames, nil)
        } catch {
            return (samples, frames, error)
        }
    }

    static func openError(_ source: AudioSourceAddress, output: AudioFormat = .cd, startAt: Duration = .zero,
                          options: AudioInputOptions = AudioInputOptions()) async -> AudioInputError? {
        do {
            let stream = try await AudioInput.open(source, output: output, startAt: startAt, options: options)
            await stream.close()
            return nil
        } catch {
            return error
        }
    }
}

/// Signal measures for the lossy and resampling checks.
enum Signal {
    /// One channel of interleaved samples, as doubles in -1...1 (16-bit scale).
    static func channel(_ samples: [Int32], _ c: Int, of n: Int) -> [Double] {
        stride(from: c, to: samples.count, by: n).map { Double(samples[$0]) / 32768 }
    }

    /// Signal-to-noise ratio in dB of `decoded` against `reference` over their common part, skipping `skip` frames at
    /// each end (codec edges), at the lag in -maxLag...maxLag that fits best; returns (dB, lag).
    static func snr(reference: [Double], decoded: [Double], skip: Int, maxLag: Int) -> (Double, Int) {
        var best = (-Double.infinity, 0)
        for lag in -maxLag...maxLag {
            var signal = 0.0, noise = 0.0
            let start = skip + max(0, -lag)
            let end = min(reference.count, decoded.count - lag) - skip
            guard end > start else { continue }
            for i in start..<end {
                let r = reference[i]
                let e = decoded[i + lag] - r
                signal += r * r
                noise += e * e
            }
            let db = 10 * log10(signal / max(noise, 1e-20))
            if db > best.0 { best = (db, lag) }
        }
        return best
    }

    /// Power of `x` at `frequency` (Goertzel), normalised so a full-scale sine gives 0.5 (its mean square).
    static func power(_ x: [Double], at frequency: Double, rate: Double) -> Double {
        let w = 2 * Double.pi * frequency / rate
        let coeff = 2 * cos(w)
        var s1 = 0.0, s2 = 0.0
        for v in x {
            let s = v + coeff * s1 - s2
            s2 = s1
            s1 = s
        }
        let p = s1 * s1 + s2 * s2 - coeff * s1 * s2
        return 2 * p / Double(x.count * x.count)
    }

    static func rms(_ x: [Double]) -> Double { sqrt(x.reduce(0) { $0 + $1 * $1 } / Double(max(1, x.count))) }
}
