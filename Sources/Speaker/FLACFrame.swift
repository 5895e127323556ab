import CFLAC
import Synchronization

/// How an audio datagram carries its samples (docs/speaker-protocol.md §7.2).
public enum AudioEncoding: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Interleaved little-endian PCM, as its sample format says (every version).
    case pcm
    /// One FLAC frame (lossless) of the same samples: version 3.
    case flac

    /// The first protocol version that defines it: a speaker that negotiated this version or a later one decodes it.
    public var version: UInt8 { self == .pcm ? 1 : SpeakerProtocolVersion.flacAudio }

    /// Whether a stream of `format` can travel in this encoding. PCM: every format. FLAC: a rate its frame header
    /// states by itself (a multiple of 10 Hz, or up to 65535 Hz; a datagram has no STREAMINFO to take it from).
    public func carries(_ format: AudioFormat) -> Bool {
        self == .pcm || format.sampleRate % 10 == 0 || format.sampleRate <= 65_535
    }

    public var description: String { rawValue }
}

/// One FLAC frame of a datagram's samples, encoded and decoded by libFLAC (CFLAC): independently decodable (no
/// STREAMINFO, no state between frames), so a lost, resent, late or reordered datagram is decoded alone.
public enum FLACFrame {
    /// libFLAC's compression level (its default).
    public static let level: UInt32 = 5
    /// A frame header is at most 16 bytes (sync, codes, a 7-byte frame number, 16-bit block size and rate, CRC-8),
    /// and a CRC-16 ends the frame.
    public static let headerAndFooter = 18

    /// The largest frame of `frames` frames of `format`: libFLAC keeps the smallest subframe per channel, and a
    /// verbatim subframe (an 8-bit header, then every sample in its bits) is always a candidate, so no frame is
    /// larger than 18 + ⌈channels × (8 + frames × bits) / 8⌉ bytes, whatever the audio.
    public static func maxSize(frames: Int, format: AudioFormat) -> Int {
        let bits = Int(format.channels) * (8 + frames * format.sampleFormat.bitsPerSample)
        return headerAndFooter + (bits + 7) / 8
    }

    /// The most frames whose FLAC frame fits `bytes` even for incompressible audio.
    public static func maxFrames(fitting bytes: Int, format: AudioFormat) -> Int {
        let channels = Int(format.channels)
        let bits = (bytes - headerAndFooter) * 8 / channels - 8
        return max(0, bits / format.sampleFormat.bitsPerSample)
    }

    /// Encodes interleaved little-endian PCM (whole frames of `format`, at least one) as one FLAC frame.
    /// Throws `.valueOutOfRange` (a format FLAC does not carry here, no frames) or `.tooLarge` (above
    /// `maxSize`: never for libFLAC).
    public static func encode(_ pcm: [UInt8], format: AudioFormat) throws(SpeakerError) -> [UInt8] {
        let frames = pcm.count / format.bytesPerFrame
        guard frames > 0, pcm.count % format.bytesPerFrame == 0 else {
            throw SpeakerError(.valueOutOfRange, "a FLAC frame holds whole frames, at least one (got \(pcm.count) bytes)")
        }
        guard AudioEncoding.flac.carries(format) else {
            throw SpeakerError(.valueOutOfRange, "FLAC frames here cannot state \(format.sampleRate) Hz (a multiple of 10 Hz or up to 65535 Hz)")
        }
        let samples = PCMSamples.unpack(pcm, format.sampleFormat)
        let capacity = maxSize(frames: frames, format: format)
        var out = [UInt8](repeating: 0, count: capacity)
        let size = samples.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o in
                tuneup_flac_encode_frame(s.baseAddress, UInt32(frames), UInt32(format.channels),
                                         UInt32(format.sampleFormat.bitsPerSample), format.sampleRate, level,
                                         o.baseAddress, capacity)
            }
        }
        guard size > 0 else { throw error(size, "FLAC encoding of \(frames) frames (\(format))") }
        out.removeLast(capacity - size)
        return out
    }

    /// Decodes the one FLAC frame of `payload`, which must hold `frames` frames of `format`, to interleaved
    /// little-endian PCM. Throws `.badAudio` (not a whole FLAC frame, a CRC mismatch, another block size, channel
    /// count or sample size, more than one frame) — never traps.
    public static func decode(_ payload: ArraySlice<UInt8>, frames: Int, format: AudioFormat) throws(SpeakerError) -> [UInt8] {
        guard frames > 0 else { throw SpeakerError(.badAudio, "a FLAC frame holds at least one frame") }
        // libFLAC's samples go straight to little-endian bytes (no Int32 array in between: every datagram is decoded).
        var result = 0
        let pcm = [UInt8](unsafeUninitializedCapacity: frames * format.bytesPerFrame) { out, count in
            result = payload.withUnsafeBufferPointer { p in
                tuneup_flac_decode_frame(p.baseAddress, p.count, UInt32(frames), UInt32(format.channels),
                                         UInt32(format.sampleFormat.bitsPerSample), out.baseAddress)
            }
            count = result == frames ? out.count : 0
        }
        guard result == frames else { throw error(result, "FLAC frame of \(payload.count) bytes (\(frames) frames, \(format))") }
        return pcm
    }

    private static func error(_ code: Int, _ what: String) -> SpeakerError {
        switch code {
        case Int(TUNEUP_FLAC_ERROR_TOO_LARGE): SpeakerError(.tooLarge, "\(what): the frame is larger than its bound")
        case Int(TUNEUP_FLAC_ERROR_NO_FRAME): SpeakerError(.badAudio, "\(what): no whole FLAC frame")
        case Int(TUNEUP_FLAC_ERROR_CORRUPT): SpeakerError(.badAudio, "\(what): corrupt (lost sync, a bad header or a CRC mismatch)")
        case Int(TUNEUP_FLAC_ERROR_FORMAT): SpeakerError(.badAudio, "\(what): the frame's block size, channels or sample size differ")
        case Int(TUNEUP_FLAC_ERROR_EXTRA): SpeakerError(.badAudio, "\(what): more than one frame")
        case Int(TUNEUP_FLAC_ERROR_ALLOCATION): SpeakerError(.badAudio, "\(what): libFLAC could not allocate")
        default: SpeakerError(.valueOutOfRange, "\(what): libFLAC refused it")
        }
    }
}

/// Interleaved little-endian PCM to signed 32-bit samples (what libFLAC's encoder takes).
enum PCMSamples {
    static func unpack(_ pcm: [UInt8], _ format: SampleFormat) -> [Int32] {
        let width = format.bytesPerSample
        return [Int32](unsafeUninitializedCapacity: pcm.count / width) { out, count in
            pcm.withUnsafeBufferPointer { b in
                var i = 0, n = 0
                if width == 2 {
                    while i + 1 < b.count { out[n] = Int32(Int16(bitPattern: UInt16(b[i]) | UInt16(b[i + 1]) << 8)); i += 2; n += 1 }
                } else {
                    while i + 2 < b.count {
                        let u = UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16
                        out[n] = Int32(bitPattern: u << 8) >> 8
                        i += 3; n += 1
                    }
                }
                count = n
            }
        }
    }
}

/// A stream's FLAC encoder kept from one packet to the next (libFLAC's set-up costs some 75 µs in a virtual machine,
/// its CPUID probes: once per stream instead of once per packet). Every frame it writes still decodes alone (FLAC
/// frames carry no state; their frame numbers count up). libFLAC writes a block once it holds one frame more than
/// the block, so each packet's frames go in with the next packet's first frame (`next`), which the next packet then
/// starts with; a packet without `next` finishes the stream. One owner at a time (the player's actor, a virtual
/// playback); the lock keeps a misuse from racing in C.
public final class FLACStreamEncoder: Sendable {
    public let format: AudioFormat
    /// The block size: a packet's frames.
    public let frames: Int

    private struct State: @unchecked Sendable {  // the C encoder is used under the lock only
        var stream: OpaquePointer?
        /// The first frame of the next packet was fed already (as the previous packet's `next`).
        var holdsNext = false
    }
    private let state: Mutex<State>

    /// Throws `.valueOutOfRange` for a format FLAC does not carry here or a block under 16 frames.
    public init(format: AudioFormat, frames: Int) throws(SpeakerError) {
        guard AudioEncoding.flac.carries(format) else {
            throw SpeakerError(.valueOutOfRange, "FLAC frames here cannot state \(format.sampleRate) Hz (a multiple of 10 Hz or up to 65535 Hz)")
        }
        guard let stream = tuneup_flac_stream_new(UInt32(frames), UInt32(format.channels), UInt32(format.sampleFormat.bitsPerSample),
                                                  format.sampleRate, FLACFrame.level) else {
            throw SpeakerError(.valueOutOfRange, "libFLAC refused a stream of \(frames)-frame blocks (\(format))")
        }
        self.format = format
        self.frames = frames
        state = Mutex(State(stream: stream))
    }

    deinit { state.withLock { tuneup_flac_stream_delete($0.stream) } }

    /// True once a packet without `next` finished the stream.
    public var isFinished: Bool { state.withLock { $0.stream == nil } }

    /// The FLAC frame of `pcm` (whole frames, 1...`frames`, starting with the frame fed as the last `next`, if any);
    /// `next` is the next packet's first frame (empty: the stream ends here).
    /// Throws `.valueOutOfRange` (a finished stream, not whole frames) or `.tooLarge` (never: `FLACFrame.maxSize`).
    public func encode(_ pcm: [UInt8], next: ArraySlice<UInt8>) throws(SpeakerError) -> [UInt8] {
        let format = self.format, frames = self.frames
        let bytesPerFrame = format.bytesPerFrame
        guard pcm.count % bytesPerFrame == 0, next.count % bytesPerFrame == 0, next.count <= bytesPerFrame,
              pcm.count / bytesPerFrame <= frames, !pcm.isEmpty else {
            throw SpeakerError(.valueOutOfRange, "a FLAC stream packet holds 1...\(frames) whole frames and 0 or 1 next frame")
        }
        let samples = PCMSamples.unpack(pcm, format.sampleFormat)
        let nextSamples = PCMSamples.unpack(Array(next), format.sampleFormat)
        let capacity = FLACFrame.maxSize(frames: pcm.count / bytesPerFrame, format: format)
        let (size, frame) = state.withLock { s -> (Int, [UInt8]) in
            guard let stream = s.stream else { return (-100, []) }
            let skip = s.holdsNext ? Int(format.channels) : 0
            let count = pcm.count / bytesPerFrame - (s.holdsNext ? 1 : 0)
            var out = [UInt8](repeating: 0, count: capacity)
            let size = samples.withUnsafeBufferPointer { p in
                nextSamples.withUnsafeBufferPointer { n in
                    out.withUnsafeMutableBufferPointer { o in
                        tuneup_flac_stream_encode(stream, p.baseAddress! + skip, UInt32(count), n.baseAddress,
                                                  UInt32(n.count / Int(format.channels)), o.baseAddress, capacity)
                    }
                }
            }
            s.holdsNext = !next.isEmpty
            if next.isEmpty {
                tuneup_flac_stream_delete(stream)
                s.stream = nil
            }
            return (size, size > 0 ? Array(out.prefix(size)) : [])
        }
        switch size {
        case 1...: return frame
        case -100: throw SpeakerError(.valueOutOfRange, "this FLAC stream has ended")
        case Int(TUNEUP_FLAC_ERROR_TOO_LARGE): throw SpeakerError(.tooLarge, "a FLAC frame above its bound")
        default: throw SpeakerError(.valueOutOfRange, "libFLAC failed on a packet of \(pcm.count / bytesPerFrame) frames")
        }
    }
}
