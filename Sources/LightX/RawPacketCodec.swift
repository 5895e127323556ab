/// The unframed packet form used on USB (sheet §1.1, §1.7): the 12-byte header followed by the buffer,
/// with no transport header and no checksum. The USB back end moves these in HID feature reports
/// (buffer in report 0xF1, header in report 0xF0).
public enum RawPacketCodec {
    /// Header followed by the buffer.
    public static func encode(_ packet: Packet) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Header.size + packet.buffer.count)
        packet.header.encode(into: &out)
        out.append(contentsOf: packet.buffer)
        return out
    }

    /// Decodes one message: a header and, when the buffer flag is set, up to param1 buffer bytes.
    ///
    /// As in the reference host, a message shorter than param1 says keeps the bytes that are there (the header's
    /// param1 is left as received); bytes beyond param1 are ignored. Throws `.truncated` below 12 bytes and
    /// `.bufferTooLarge` when more than 256 buffer bytes would be kept.
    public static func decode<C: Collection>(_ message: C) throws(LightXError) -> Packet where C.Element == UInt8 {
        let header = try Header(decoding: message)
        guard header.hasBuffer else {
            return Packet(uncheckedHeader: header, buffer: [])
        }
        let available = message.count - Header.size
        let count = min(available, Int(min(header.param1, UInt32(Int32.max))))
        return try Packet(header: header, buffer: Array(message.dropFirst(Header.size).prefix(count)))
    }
}
