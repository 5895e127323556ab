/// One audio datagram (UDP, controller → speaker): a run of PCM frames of one stream with the time its first frame
/// is to be heard.
///
/// `"TA" (54 41) | version u8 | flags u8 | stream id u32 | sequence u32 | first frame u64 | presentation time u64 |
/// sample rate u32 | channels u8 | sample format u8 | frame count u16 | PCM | CRC-32 u32`
///
/// big-endian header (36 bytes), PCM interleaved little-endian as its sample format says, CRC-32 over everything
/// before it. A datagram is at most 1472 bytes (an Ethernet MTU without fragmentation).
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
    /// Interleaved PCM: frameCount × format.bytesPerFrame bytes.
    public let pcm: [UInt8]

    /// Throws `.valueOutOfRange` when the PCM is not a whole number of frames, is empty without end of stream, or
    /// `.tooLarge` when above `maxPCMBytes`.
    public init(streamId: UInt32, sequence: UInt32, firstFrame: UInt64, presentationTime: UInt64, format: AudioFormat,
                endOfStream: Bool = false, pcm: [UInt8]) throws(SpeakerError) {
        guard pcm.count <= Self.maxPCMBytes else {
            throw SpeakerError(.tooLarge, "an audio packet holds at most \(Self.maxPCMBytes) PCM bytes, got \(pcm.count)")
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
    }

    /// Frames in the packet.
    public var frameCount: Int { pcm.count / format.bytesPerFrame }

    /// The most frames a packet of `format` holds.
    public static func maxFrames(for format: AudioFormat) -> Int { maxPCMBytes / format.bytesPerFrame }

    /// The controller-timeline time at which frame `index` of this packet is due.
    public func presentationTime(ofFrame index: Int) -> UInt64 {
        presentationTime &+ format.nanoseconds(forFrames: UInt64(max(0, index)))
    }

    /// The datagram's bytes.
    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: Self.overhead + pcm.count)
        w.raw(Self.magic)
        w.u8(SpeakerProtocolVersion.current)
        w.u8(endOfStream ? Self.endOfStreamFlag : 0)
        w.u32(streamId)
        w.u32(sequence)
        w.u64(firstFrame)
        w.u64(presentationTime)
        format.encode(into: &w)
        w.u16(UInt16(frameCount))
        w.raw(pcm)
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
        guard SpeakerProtocolVersion.datagrams.contains(version) else {
            throw SpeakerError(.unsupportedVersion, "audio protocol version \(version) is not supported")
        }
        try CRC32.verifyTrailer(bytes[...], what: "audio packet")
        let flags = try r.u8()
        guard flags & ~endOfStreamFlag == 0 else {
            throw SpeakerError(.valueOutOfRange, "audio packet flags \(hex(flags)) set undefined bits")
        }
        let stream = try r.u32()
        let sequence = try r.u32()
        let first = try r.u64()
        let time = try r.u64()
        let format = try AudioFormat.decode(from: &r)
        let frames = Int(try r.u16())
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
