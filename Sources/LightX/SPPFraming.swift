/// The SPP framing used on every byte stream (RFCOMM, serial, pty, TCP): sheet §1.2.
///
/// `FF 5A 00 00 | length (u16 big-endian, whole frame) | 12-byte header | buffer (N ≤ 256) | checksum`,
/// where length = N + 19 and the checksum makes all frame bytes sum to 0 mod 256.
public enum SPPFraming {
    /// The four bytes every frame starts with.
    public static let magic: [UInt8] = [0xFF, 0x5A, 0x00, 0x00]
    /// Transport header (magic + length) size.
    public static let transportHeaderSize = 6
    /// Bytes a frame adds around the buffer: transport header, LightX header, checksum.
    public static let overhead = transportHeaderSize + Header.size + 1
    /// The shortest valid frame: no buffer.
    public static let minFrameLength = overhead
    /// The longest valid frame: a 256-byte buffer (0x0113).
    public static let maxFrameLength = overhead + Packet.maxBufferSize

    /// The checksum byte for `bytes`: the two's-complement negation of their sum mod 256.
    public static func checksum<C: Sequence>(_ bytes: C) -> UInt8 where C.Element == UInt8 {
        var sum: UInt8 = 0
        for b in bytes { sum &+= b }
        return 0 &- sum
    }

    /// Appends the frame for `packet` to `out`.
    public static func encode(_ packet: Packet, into out: inout [UInt8]) {
        let length = overhead + packet.buffer.count
        let first = out.count
        out.reserveCapacity(first + length)
        out.append(contentsOf: magic)
        out.append(UInt8(truncatingIfNeeded: length >> 8))
        out.append(UInt8(truncatingIfNeeded: length))
        packet.header.encode(into: &out)
        out.append(contentsOf: packet.buffer)
        out.append(checksum(out[first...]))
    }

    /// The frame for `packet`.
    public static func encode(_ packet: Packet) -> [UInt8] {
        var out: [UInt8] = []
        encode(packet, into: &out)
        return out
    }

    /// Decodes exactly one complete frame, checking magic, length and checksum.
    /// Throws `LightXError` with code `.truncated` or `.malformed` and a message saying which check failed.
    public static func decodeFrame(_ frame: [UInt8]) throws(LightXError) -> Packet {
        guard frame.count >= minFrameLength else {
            throw LightXError(.truncated, "an SPP frame is at least 19 bytes, got \(frame.count)")
        }
        guard Array(frame.prefix(4)) == magic else {
            throw LightXError(.malformed, "an SPP frame starts with ff 5a 00 00, got \(hexString(frame.prefix(4)))")
        }
        let length = Int(frame[4]) << 8 | Int(frame[5])
        guard (minFrameLength...maxFrameLength).contains(length) else {
            throw LightXError(.malformed, "SPP frame length \(length) is outside 19...275")
        }
        guard length == frame.count else {
            throw LightXError(length > frame.count ? .truncated : .malformed,
                              "SPP frame length field says \(length) bytes, got \(frame.count)")
        }
        guard checksum(frame.dropLast()) == frame[frame.count - 1] else {
            throw LightXError(.malformed, "SPP checksum mismatch: expected \(hexByte(checksum(frame.dropLast())).lowercased()), got \(hexByte(frame[frame.count - 1]).lowercased())")
        }
        let header = frame.withUnsafeBytes { Header(unchecked: $0, at: transportHeaderSize) }
        return Packet(uncheckedHeader: header, buffer: frame[(transportHeaderSize + Header.size)..<(length - 1)])
    }
}

