/// The protocol versions this codec speaks. The frame layout (header and CRC) is the same in every version; the
/// version byte says which grammar the payload follows.
public enum SpeakerProtocolVersion {
    /// The version this codec writes unless a session negotiated another: audio and discovery datagrams, hello and
    /// its reply, and the events of version 1's grammar (version 2 changed none of them, so every speaker and
    /// controller reads them).
    public static let current: UInt8 = 1
    /// The versions this codec decodes. Version 2 adds the `resendRequest` event (lost-packet recovery), version 3
    /// FLAC audio datagrams (a speaker that negotiates 3 decodes them), version 4 clock sync over UDP (a speaker that
    /// negotiates 4 answers `ClockDatagram`s on its control port's number), version 5 the `playbackPaused` event (the
    /// first frame a paused speaker has not played: sample-exact resume).
    public static let supported: ClosedRange<UInt8> = 1...5
    /// The first version with `resendRequest` (docs/speaker-protocol.md §7.1).
    public static let resendRequests: UInt8 = 2
    /// The first version with FLAC audio datagrams (docs/speaker-protocol.md §7.2).
    public static let flacAudio: UInt8 = 3
    /// The first version with clock sync over UDP (`ClockDatagram`, docs/speaker-protocol.md §6.1).
    public static let udpClockSync: UInt8 = 4
    /// The first version with the `playbackPaused` event (docs/speaker-protocol.md §3.2, pause and resume).
    public static let pausePositions: UInt8 = 5
    /// The versions of discovery datagrams: versions 2 and 3 changed none, so they stay version 1. (Audio datagrams:
    /// `AudioPacket.versions`.)
    public static let datagrams: ClosedRange<UInt8> = 1...1
}

/// One control frame as it travels on the TCP stream, before its payload is interpreted:
///
/// `"TS" (54 53) | version u8 | type u8 | request id u32 | payload length u16 | payload | CRC-32 u32`
///
/// all big-endian, the CRC-32 (ISO-HDLC, as zlib) over every byte before it. 14 bytes of overhead, a payload of at
/// most 4096 bytes.
public struct ControlFrame: Sendable, Hashable {
    /// The two bytes every control frame starts with ("TS").
    public static let magic: [UInt8] = [0x54, 0x53]
    /// Magic, version, type, request id, length.
    public static let headerSize = 10
    /// Header and CRC.
    public static let overhead = headerSize + 4
    /// The largest payload: far above any message (a DeviceInfo is under 1.4 kB), small enough to bound the
    /// deframer's memory.
    public static let maxPayloadSize = 4096
    /// The longest frame.
    public static let maxFrameSize = overhead + maxPayloadSize

    /// The protocol version of the payload grammar (any value here; `ControlPacket` checks it).
    public var version: UInt8
    /// The message type (any value here; `ControlPacket` checks it).
    public var type: UInt8
    /// The reply key: chosen by the controller for a request, echoed by its replies; 0 on events.
    public var requestId: UInt32
    /// At most `maxPayloadSize` bytes.
    public var payload: [UInt8]

    /// Throws `.tooLarge` for a payload above 4096 bytes.
    public init(version: UInt8, type: UInt8, requestId: UInt32, payload: [UInt8]) throws(SpeakerError) {
        guard payload.count <= Self.maxPayloadSize else {
            throw SpeakerError(.tooLarge, "a control payload is at most \(Self.maxPayloadSize) bytes, got \(payload.count)")
        }
        self.version = version
        self.type = type
        self.requestId = requestId
        self.payload = payload
    }

    init(unchecked version: UInt8, type: UInt8, requestId: UInt32, payload: [UInt8]) {
        self.version = version
        self.type = type
        self.requestId = requestId
        self.payload = payload
    }

    /// The frame's bytes.
    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: Self.overhead + payload.count)
        w.raw(Self.magic)
        w.u8(version)
        w.u8(type)
        w.u32(requestId)
        w.u16(UInt16(payload.count))
        w.raw(payload)
        w.crc()
        return w.bytes
    }

    /// Decodes exactly one frame: magic, length and CRC are checked; version and type are not (see `ControlPacket`).
    /// Throws `.truncated`, `.trailingBytes`, `.badMagic`, `.tooLarge` or `.badChecksum`.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(SpeakerError) -> ControlFrame {
        guard bytes.count >= overhead else {
            throw SpeakerError(.truncated, "a control frame is at least \(overhead) bytes, got \(bytes.count)")
        }
        var r = ByteReader(bytes, what: "control frame")
        let m = try r.take(2)
        guard m.elementsEqual(magic) else {
            throw SpeakerError(.badMagic, "a control frame starts with 54 53, got \(speakerHex(m))")
        }
        let version = try r.u8()
        let type = try r.u8()
        let id = try r.u32()
        let length = Int(try r.u16())
        guard length <= maxPayloadSize else {
            throw SpeakerError(.tooLarge, "control payload length \(length) is above \(maxPayloadSize)")
        }
        guard bytes.count >= overhead + length else {
            throw SpeakerError(.truncated, "control frame length field says \(overhead + length) bytes, got \(bytes.count)")
        }
        guard bytes.count == overhead + length else {
            throw SpeakerError(.trailingBytes, "control frame length field says \(overhead + length) bytes, got \(bytes.count)")
        }
        try CRC32.verifyTrailer(bytes, what: "control frame")
        return ControlFrame(unchecked: version, type: type, requestId: id, payload: Array(try r.take(length)))
    }

    /// Decodes exactly one frame.
    public static func decode(_ bytes: [UInt8]) throws(SpeakerError) -> ControlFrame { try decode(bytes[...]) }
}

/// Cuts control frames out of a TCP byte stream: feed it chunks of any size with `append(_:)` and drain it with
/// `next()`.
///
/// It hunts for the magic `54 53`, waits for the 10-byte header, rejects a length above 4096, waits for the whole
/// frame and checks its CRC-32. A rejected candidate (bad length or CRC) is reported once by `next()` as
/// `.rejected` and the hunt goes on one byte after its start, so a good frame inside or after a bad one is still
/// found; bytes skipped while hunting are only counted. Decisions are taken only when enough bytes are there, so
/// the output is the same however the stream is cut into chunks. It never traps and holds at most one frame
/// (4110 bytes) plus the last chunk.
public struct ControlDeframer: Sendable {
    /// One result of `next()`.
    public enum Output: Sendable, Hashable {
        /// A frame whose magic, length and CRC are right (its version and type are not checked yet).
        case frame(ControlFrame)
        /// A frame candidate that was dropped, with the reason (`.tooLarge` or `.badChecksum`).
        case rejected(SpeakerError)
    }

    /// What the deframer has seen so far.
    public struct Statistics: Sendable, Hashable {
        /// Frames delivered.
        public var frames = 0
        /// Candidates rejected for a length above 4096.
        public var lengthErrors = 0
        /// Candidates rejected for a CRC mismatch.
        public var checksumErrors = 0
        /// Bytes skipped while hunting for the magic (garbage and the first byte of every rejected candidate).
        public var discardedBytes = 0
        public init() {}
    }

    /// Counters of frames, rejections and skipped bytes.
    public private(set) var statistics = Statistics()
    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    /// Bytes held but not yet delivered or skipped.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds received bytes (the shape of the Session core's `PacketDeframer.append`).
    public mutating func append(_ bytes: [UInt8]) { append(bytes[...]) }

    /// Adds received bytes.
    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    private mutating func skip(_ n: Int) {
        start += n
        statistics.discardedBytes += n
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
    }

    /// The next frame or rejection, or nil when more bytes are needed.
    public mutating func next() -> Output? {
        while true {
            let available = buffer.count - start
            guard available > 0 else { return nil }
            // Hunt for the magic.
            if buffer[start] != ControlFrame.magic[0] {
                var i = start + 1
                while i < buffer.count, buffer[i] != ControlFrame.magic[0] { i += 1 }
                skip(i - start)
                continue
            }
            guard available >= 2 else { return nil }
            if buffer[start + 1] != ControlFrame.magic[1] {
                skip(1)
                continue
            }
            guard available >= ControlFrame.headerSize else { return nil }
            let length = Int(buffer[start + 8]) << 8 | Int(buffer[start + 9])
            guard length <= ControlFrame.maxPayloadSize else {
                statistics.lengthErrors += 1
                skip(1)
                return .rejected(SpeakerError(.tooLarge, "control payload length \(length) is above \(ControlFrame.maxPayloadSize); skipped"))
            }
            let total = ControlFrame.overhead + length
            guard available >= total else { return nil }
            do {
                let frame = try ControlFrame.decode(buffer[start..<(start + total)])
                statistics.frames += 1
                start += total
                if start == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    start = 0
                }
                return .frame(frame)
            } catch {
                statistics.checksumErrors += 1
                skip(1)
                return .rejected(error)
            }
        }
    }

    /// Gives up the partial frame the deframer is waiting to complete (its length field may be corrupt) by skipping
    /// its first byte; true when bytes were skipped, so `next()` may find frames behind it. For a receive timeout.
    public mutating func abandonPartialFrame() -> Bool {
        guard bufferedByteCount > 0 else { return false }
        skip(1)
        return true
    }
}
