import Speaker
import Synchronization

/// Where a playback's PCM comes from: interleaved little-endian frames of one `AudioFormat`, read in order.
///
/// Conformers are reference types with their own locking (a source is read by one player at a time). `read` may
/// block on I/O only off the cooperative pool (a decoder runs on a thread of its own and hands the frames over).
public protocol PCMSource: AnyObject, Sendable {
    /// The format of every frame `read` returns.
    var format: AudioFormat { get }
    /// Frames in the whole source when known (a file), nil for an endless or unknown-length stream.
    var totalFrames: UInt64? { get }
    /// Whether the source can go back (`seek`): files yes, HTTP streams no.
    var isSeekable: Bool { get }
    /// Whether playback can start later in the source (`seek` forward before it is read): every seekable source, and
    /// a stream that decodes and drops up to the start (an HTTP source). Default: `isSeekable`.
    var canStartLater: Bool { get }
    /// Up to `maxFrames` whole frames (`count` a multiple of `format.bytesPerFrame`); empty at the end.
    func read(maxFrames: Int) async throws -> [UInt8]
    /// Positions the next `read` at frame `frame`.
    func seek(toFrame frame: UInt64) async throws
}

extension PCMSource {
    public var canStartLater: Bool { isSeekable }
}

/// A deterministic test signal: every sample of every channel is a function of its frame index (`sample(frame:channel:)`),
/// pseudo-random so that a misplaced, repeated or dropped sample is always visible, at a level of `amplitude` (0...1).
/// Tests and benchmarks compare what a speaker played with it sample for sample.
public final class GeneratedSignal: PCMSource {
    public let format: AudioFormat
    public let totalFrames: UInt64?
    public var isSeekable: Bool { true }
    public let seed: UInt64
    public let amplitude: Double
    private let position = Mutex<UInt64>(0)

    /// `seconds` of signal (nil: endless).
    public init(format: AudioFormat = .cd, seconds: Double? = nil, seed: UInt64 = 1, amplitude: Double = 0.5) {
        self.format = format
        self.totalFrames = seconds.map { UInt64(max(0, $0) * Double(format.sampleRate)) }
        self.seed = seed
        self.amplitude = max(0, min(1, amplitude))
    }

    /// The sample value of `frame`, `channel` (signed, within the format's range scaled by the amplitude).
    public func sample(frame: UInt64, channel: Int) -> Int32 {
        var x = seed &* 0x9E37_79B9_7F4A_7C15 &+ frame &* 0xBF58_476D_1CE4_E5B9 &+ UInt64(channel) &* 0x94D0_49BB_1331_11EB
        x = (x ^ (x >> 31)) &* 0xBF58_476D_1CE4_E5B9
        x ^= x >> 29
        let full: Double = format.sampleFormat == .s16le ? 32767 : 8_388_607
        let unit = Double(Int64(bitPattern: x) >> 11) / Double(1 << 52)  // -1 ..< 1
        return Int32((unit * full * amplitude).rounded(.towardZero))
    }

    /// The bytes of frames `start ..< start + count`.
    public func frames(_ start: UInt64, count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * format.bytesPerFrame)
        for f in start..<(start + UInt64(count)) {
            for c in 0..<Int(format.channels) { PCM.append(sample(frame: f, channel: c), format.sampleFormat, to: &bytes) }
        }
        return bytes
    }

    public func read(maxFrames: Int) async throws -> [UInt8] {
        let (start, count) = position.withLock { p -> (UInt64, Int) in
            let remaining = totalFrames.map { $0 > p ? $0 - p : 0 } ?? UInt64(maxFrames)
            let n = Int(min(UInt64(max(0, maxFrames)), remaining))
            defer { p += UInt64(n) }
            return (p, n)
        }
        return frames(start, count: count)
    }

    public func seek(toFrame frame: UInt64) async throws { position.withLock { $0 = frame } }
}

/// Little-endian PCM samples: the one reader and writer of sample values (sources, the speaker's gain, checks).
public enum PCM {
    /// Appends `value` in `format` (clamped to its range).
    @inline(__always)
    public static func append(_ value: Int32, _ format: SampleFormat, to bytes: inout [UInt8]) {
        switch format {
        case .s16le:
            let v = Int16(clamping: value)
            bytes.append(UInt8(truncatingIfNeeded: v)); bytes.append(UInt8(truncatingIfNeeded: v >> 8))
        case .s24le:
            let v = max(-8_388_608, min(8_388_607, value))
            bytes.append(UInt8(truncatingIfNeeded: v)); bytes.append(UInt8(truncatingIfNeeded: v >> 8))
            bytes.append(UInt8(truncatingIfNeeded: v >> 16))
        }
    }

    /// The sample at `offset` of `bytes` in `format` (sign-extended).
    @inline(__always)
    public static func sample<C: RandomAccessCollection>(_ bytes: C, at offset: C.Index, _ format: SampleFormat) -> Int32
        where C.Element == UInt8 {
        let b0 = Int32(bytes[offset]), b1 = Int32(bytes[bytes.index(after: offset)])
        switch format {
        case .s16le: return Int32(Int16(truncatingIfNeeded: b0 | b1 << 8))
        case .s24le:
            let b2 = Int32(bytes[bytes.index(offset, offsetBy: 2)])
            return ((b0 | b1 << 8 | b2 << 16) << 8) >> 8
        }
    }

    /// Scales the samples of `pcm` by `volume / 50` in place, as `scaled` does (no allocation: the renderer applies
    /// it to every frame it plays).
    public static func scale(_ pcm: inout [UInt8], volume: Int, format: SampleFormat) {
        if volume >= 50 { return }
        pcm.withUnsafeMutableBytes { scale($0, volume: volume, format: format) }
    }

    /// Scales the samples in `b` by `volume / 50` in place (the renderer's output, a run of frames at a time).
    public static func scale(_ b: UnsafeMutableRawBufferPointer, volume: Int, format: SampleFormat) {
        if volume >= 50 { return }
        if volume <= 0 {
            b.initializeMemory(as: UInt8.self, repeating: 0)
            return
        }
        let v = Int32(volume)
        var i = 0
        switch format {
        case .s16le:
            while i + 1 < b.count {
                let x = Int32(Int16(truncatingIfNeeded: UInt16(b[i]) | UInt16(b[i + 1]) << 8)) * v / 50
                b[i] = UInt8(truncatingIfNeeded: x); b[i + 1] = UInt8(truncatingIfNeeded: x >> 8)
                i += 2
            }
        case .s24le:
            while i + 2 < b.count {
                let x = (((Int32(b[i]) | Int32(b[i + 1]) << 8 | Int32(b[i + 2]) << 16) << 8) >> 8) * v / 50
                b[i] = UInt8(truncatingIfNeeded: x); b[i + 1] = UInt8(truncatingIfNeeded: x >> 8)
                b[i + 2] = UInt8(truncatingIfNeeded: x >> 16)
                i += 3
            }
        }
    }

    /// `pcm` scaled by `volume / 50` (the speaker's gain: 50 is unity, the samples unchanged; 0 silence).
    public static func scaled(_ pcm: ArraySlice<UInt8>, volume: Int, format: SampleFormat) -> [UInt8] {
        if volume >= 50 { return Array(pcm) }
        if volume <= 0 { return [UInt8](repeating: 0, count: pcm.count) }
        var out: [UInt8] = []
        out.reserveCapacity(pcm.count)
        var i = pcm.startIndex
        let step = format.bytesPerSample
        while i < pcm.endIndex {
            append(sample(pcm, at: i, format) * Int32(volume) / 50, format, to: &out)
            i += step
        }
        return out
    }
}
