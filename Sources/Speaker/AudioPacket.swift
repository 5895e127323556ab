/// One audio datagram (UDP, controller → speaker): a run of PCM frames of one stream with the time its first frame
/// is to be heard.
///
/// `"TA" (54 41) | version u8 | flags u8 | stream id u32 | sequence u32 | first frame u64 | presentation time u64 |
/// sample rate u32 | channels u8 | sample format u8 | frame count u16 | PCM | CRC-32 u32`
///
/// big-endian header (36 bytes), PCM interleaved little-endian as its sample format says, CRC-32 over everything
/// before it. A datagram is at most 1472 bytes (an Ethernet MTU without fragmentation).
///
/// Version 3 adds flag bit 1 (`flac`): the samples travel as one FLAC frame (`FLACFrame`) in place of the PCM, the
/// header's fields unchanged in meaning; `pcm` is then the frame decoded. PCM packets are still written as version 1.
public struct AudioPacket: Sendable, Hashable {
    /// The two bytes every audio packet starts with ("TA").
    public static let magic: [UInt8] = [0x54, 0x41]
    public static let headerSize = 36
    public static let overhead = headerSize + 4
    /// The largest datagram.
    public static let maxDatagramSize = 1472
    /// The most PCM bytes a packet holds.
    public static let maxPCMBytes = maxDatagramSize - overhead

    /// Flag bit 0: the last packet of the stream (it may hold no frames).
    public static let endOfStreamFlag: UInt8 = 0x01
    /// Flag bit 1 (version 3): the payload is one FLAC frame of the packet's frames.
    public static let flacFlag: UInt8 = 0x02
    /// The datagram versions: 1 (PCM) and 3 (adds FLAC); version 2 changed only the control part and has none.
    public static let versions: Set<UInt8> = [1, SpeakerProtocolVersion.flacAudio]

    /// The stream, as announced by `play`.
    public let streamId: UInt32
    /// Packet number in the stream: 0, 1, 2, ... (wraps); a gap is a loss, a smaller number a reordering.
    public let sequence: UInt32
    /// Index in the stream of the packet's first frame: the frames of packet n+1 start where packet n's end, so the
    /// speaker places every frame exactly even across a lost packet.
    public let firstFrame: UInt64
    /// When the first frame is to be heard, nanoseconds on the controller's timeline (the speaker maps it to its DAC
    /// clock with its `ClockMap`); frame k of the packet is due `k / sampleRate` seconds later.
    public let presentationTime: UInt64
    public let format: AudioFormat
    public let endOfStream: Bool
    /// Interleaved PCM: frameCount × format.bytesPerFrame bytes (with FLAC, the frame decoded).
    public let pcm: [UInt8]
    /// How the samples travel.
    public let encoding: AudioEncoding
    /// The FLAC frame on the wire (nil: PCM, or no frames).
    private let flacFrame: [UInt8]?

    /// Throws `.valueOutOfRange` when the PCM is not a whole number of frames, is empty without end of stream, or
    /// `.tooLarge` when above `maxFrames(for:encoding:)`. With `.flac` the frames are encoded here (once per packet).
    public init(streamId: UInt32, sequence: UInt32, firstFrame: UInt64, presentationTime: UInt64, format: AudioFormat,
                endOfStream: Bool = false, encoding: AudioEncoding = .pcm, pcm: [UInt8]) throws(SpeakerError) {
        try self.init(streamId: streamId, sequence: sequence, firstFrame: firstFrame, presentationTime: presentationTime,
                      format: format, endOfStream: endOfStream, encoding: encoding, pcm: pcm, flacFrame: nil)
    }

    /// A FLAC packet whose frame was encoded already (by a stream's `FLACStreamEncoder`): `flacFrame` must be `pcm`'s.
    public init(streamId: UInt32, sequence: UInt32, firstFrame: UInt64, presentationTime: UInt64, format: AudioFormat,
                endOfStream: Bool = false, pcm: [UInt8], flacFrame: [UInt8]) throws(SpeakerError) {
        try self.init(streamId: streamId, sequence: sequence, firstFrame: firstFrame, presentationTime: presentationTime,
                      format: format, endOfStream: endOfStream, encoding: .flac, pcm: pcm, flacFrame: Optional(flacFrame))
    }

    private init(streamId: UInt32, sequence: UInt32, firstFrame: UInt64, presentationTime: UInt64, format: AudioFormat,
                 endOfStream: Bool, encoding: AudioEncoding, pcm: [UInt8], flacFrame received: [UInt8]?) throws(SpeakerError) {
        let limit = Self.maxFrames(for: format, encoding: encoding) * format.bytesPerFrame
        guard pcm.count <= limit else {
            throw SpeakerError(.tooLarge, "an audio packet (\(encoding)) holds at most \(limit) PCM bytes, got \(pcm.count)")
        }
        guard pcm.count % format.bytesPerFrame == 0 else {
            throw SpeakerError(.valueOutOfRange, "\(pcm.count) PCM bytes are not whole frames of \(format.bytesPerFrame) bytes")
        }
        guard !pcm.isEmpty || endOfStream else {
            throw SpeakerError(.valueOutOfRange, "an audio packet without frames must be the end of its stream")
        }
        self.streamId = streamId
        self.sequence = sequence
        self.firstFrame = firstFrame
        self.presentationTime = presentationTime
        self.format = format
        self.endOfStream = endOfStream
        self.pcm = pcm
        self.encoding = encoding
        if encoding == .flac, !pcm.isEmpty {
            if let received { flacFrame = received } else { flacFrame = try FLACFrame.encode(pcm, format: format) }
        } else {
            flacFrame = nil
        }
    }

    /// Frames in the packet.
    public var frameCount: Int { pcm.count / format.bytesPerFrame }

    /// The most frames a packet of `format` holds.
    public static func maxFrames(for format: AudioFormat) -> Int { maxPCMBytes / format.bytesPerFrame }

    /// The most frames a packet of `format` holds in `encoding`: with FLAC, as many as fit even when the frame is
    /// verbatim (`FLACFrame.maxSize`; 353 stereo s16le, 235 stereo s24le, 706 mono s16le).
    public static func maxFrames(for format: AudioFormat, encoding: AudioEncoding) -> Int {
        encoding == .pcm ? maxFrames(for: format) : FLACFrame.maxFrames(fitting: maxPCMBytes, format: format)
    }

    /// The bytes after the header: the PCM, or the FLAC frame.
    public var payload: [UInt8] { flacFrame ?? pcm }

    /// The controller-timeline time at which frame `index` of this packet is due.
    public func presentationTime(ofFrame index: Int) -> UInt64 {
        presentationTime &+ format.nanoseconds(forFrames: UInt64(max(0, index)))
    }

    /// The datagram's bytes.
    public func encode() -> [UInt8] {
        let payload = self.payload
        var w = ByteWriter(capacity: Self.overhead + payload.count)
        w.raw(Self.magic)
        w.u8(encoding.version)
        w.u8((endOfStream ? Self.endOfStreamFlag : 0) | (encoding == .flac ? Self.flacFlag : 0))
        w.u32(streamId)
        w.u32(sequence)
        w.u64(firstFrame)
        w.u64(presentationTime)
        format.encode(into: &w)
        w.u16(UInt16(frameCount))
        w.raw(payload)
        w.crc()
        return w.bytes
    }

    /// Decodes one datagram strictly. Throws `.truncated`, `.tooLarge`, `.badMagic`, `.unsupportedVersion`,
    /// `.valueOutOfRange` (unknown flags, format, a frame count that disagrees with the length), `.trailingBytes` or
    /// `.badChecksum`.
    public static func decode(_ bytes: [UInt8]) throws(SpeakerError) -> AudioPacket {
        guard bytes.count <= maxDatagramSize else {
            throw SpeakerError(.tooLarge, "an audio packet is at most \(maxDatagramSize) bytes, got \(bytes.count)")
        }
        guard bytes.count >= overhead else {
            throw SpeakerError(.truncated, "an audio packet is at least \(overhead) bytes, got \(bytes.count)")
        }
        var r = ByteReader(bytes[...], what: "audio packet")
        let m = try r.take(2)
        guard m.elementsEqual(magic) else { throw SpeakerError(.badMagic, "an audio packet starts with 54 41, got \(speakerHex(m))") }
        let version = try r.u8()
        guard versions.contains(version) else {
            throw SpeakerError(.unsupportedVersion, "audio protocol version \(version) is not supported")
        }
        try CRC32.verifyTrailer(bytes[...], what: "audio packet")
        let flags = try r.u8()
        let defined = version >= SpeakerProtocolVersion.flacAudio ? endOfStreamFlag | flacFlag : endOfStreamFlag
        guard flags & ~defined == 0 else {
            throw SpeakerError(.valueOutOfRange, "audio packet flags \(hex(flags)) set undefined bits")
        }
        let stream = try r.u32()
        let sequence = try r.u32()
        let first = try r.u64()
        let time = try r.u64()
        let format = try AudioFormat.decode(from: &r)
        let frames = Int(try r.u16())
        if flags & flacFlag != 0 {
            let frame = Array(try r.take(bytes.count - overhead))
            guard frames <= maxFrames(for: format, encoding: .flac) else {
                throw SpeakerError(.valueOutOfRange, "audio packet: \(frames) frames of \(format) exceed a FLAC packet's \(maxFrames(for: format, encoding: .flac))")
            }
            guard frames > 0 || frame.isEmpty else {
                throw SpeakerError(.trailingBytes, "audio packet says 0 frames, holds a \(frame.count)-byte FLAC frame")
            }
            let pcm = frames == 0 ? [] : try FLACFrame.decode(frame[...], frames: frames, format: format)
            do {
                return try AudioPacket(streamId: stream, sequence: sequence, firstFrame: first, presentationTime: time, format: format,
                                       endOfStream: flags & endOfStreamFlag != 0, encoding: .flac, pcm: pcm, flacFrame: frame)
            } catch {
                throw SpeakerError(error.code, "audio packet: \(error.message)")
            }
        }
        let pcmBytes = bytes.count - overhead
        guard frames * format.bytesPerFrame == pcmBytes else {
            throw SpeakerError(pcmBytes < frames * format.bytesPerFrame ? .truncated : .trailingBytes,
                               "audio packet says \(frames) frames of \(format.bytesPerFrame) bytes, holds \(pcmBytes) PCM bytes")
        }
        let pcm = Array(try r.take(pcmBytes))
        do {
            return try AudioPacket(streamId: stream, sequence: sequence, firstFrame: first, presentationTime: time, format: format,
                                   endOfStream: flags & endOfStreamFlag != 0, pcm: pcm)
        } catch {
            throw SpeakerError(error.code, "audio packet: \(error.message)")
        }
    }
}
