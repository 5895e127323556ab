/// A LightX packet: the 12-byte header and an optional data buffer of at most 256 bytes (sheet §1.1).
public struct Packet: Hashable, Sendable {
    /// The largest data buffer a packet carries (§1.5): the packet maximum, the flash block and the USB report payload.
    public static let maxBufferSize = 256
    /// The buffer the reference host attaches to every request that has no argument (§3.1): 256 zero bytes.
    public static let defaultRequestBuffer = [UInt8](repeating: 0, count: 256)

    public var header: Header
    /// The data buffer as it travelled (at most 256 bytes). Its length normally equals `header.param1`.
    ///
    /// Decoded packets share the received bytes instead of copying them, so this is a slice: index it from
    /// `buffer.startIndex` (or use `Array(buffer)`), not from 0.
    public private(set) var buffer: ArraySlice<UInt8>

    /// Creates a packet. Throws `.bufferTooLarge` when `buffer` exceeds 256 bytes.
    public init(header: Header, buffer: ArraySlice<UInt8>) throws(LightXError) {
        guard buffer.count <= Packet.maxBufferSize else {
            throw LightXError(.bufferTooLarge, "a LightX buffer holds at most 256 bytes, got \(buffer.count)")
        }
        self.header = header
        self.buffer = buffer
    }

    /// Creates a packet. Throws `.bufferTooLarge` when `buffer` exceeds 256 bytes.
    public init(header: Header, buffer: [UInt8]) throws(LightXError) {
        try self.init(header: header, buffer: buffer[...])
    }

    /// Creates a packet whose sizes were already checked by a decoder.
    init(uncheckedHeader header: Header, buffer: ArraySlice<UInt8>) {
        self.header = header
        self.buffer = buffer
    }

    /// Convenience accessors.
    public var command: Command { header.command }
    public var status: Status { header.status }
    public var opcode: Opcode { header.opcode }
    public var address: UInt32 { header.address }
    /// Whether this is a device push (command byte 0xC0-0xFF, §3.3).
    public var isPush: Bool { header.command.isPush }

    /// A request as the reference host builds it (§3.1): buffer flag set, status Ok, param1 = buffer length.
    ///
    /// - Parameters:
    ///   - opcode: `.read` or `.write` in normal use.
    ///   - argument: the argument buffer; nil sends the default 256 zero bytes.
    ///   - address: the 24-bit address field (flash offsets, version-file addresses); throws above 0xFFFFFF.
    ///   - source: the host id: `.bluetooth` (0x0F) on byte streams, `.usb` (0x08) on USB.
    ///   - type: `.result` on byte streams, `.nonblocking` on USB (§1.3).
    public static func request(
        _ opcode: Opcode, _ command: Command, argument: [UInt8]? = nil, address: UInt32 = 0,
        source: ModuleID = .bluetooth, destination: ModuleID = .application, type: PacketType = .result
    ) throws(LightXError) -> Packet {
        guard address <= Header.maxAddress else {
            throw LightXError(.addressOutOfRange, "LightX addresses are 24-bit; 0x\(String(address, radix: 16)) is too large")
        }
        let buffer = argument ?? Packet.defaultRequestBuffer
        let header = Header(
            source: source, destination: destination, opcode: opcode, hasBuffer: true,
            status: .ok, type: type, command: command, address: address, param1: UInt32(buffer.count))
        return try Packet(header: header, buffer: buffer)
    }

    /// The reply a device sends to `request`: same opcode and param0 (so the host can match it, §3.2), type Result,
    /// the given status and buffer. With `swapModules` the source becomes the request's destination and vice
    /// versa (what this project's devices do on byte streams); without it the header modules are echoed
    /// unchanged (what the host's USB scanner expects, §1.6).
    public static func reply(
        to request: Packet, status: Status = .ok, buffer: [UInt8] = [], swapModules: Bool = true
    ) throws(LightXError) -> Packet {
        let h = request.header
        let header = Header(
            source: swapModules ? h.destination : h.source,
            destination: swapModules ? h.source : h.destination,
            opcode: h.opcode, hasBuffer: !buffer.isEmpty, status: status, type: .result,
            command: h.command, address: h.address, param1: UInt32(buffer.count))
        return try Packet(header: header, buffer: buffer)
    }

    /// A device push (§3.3): command 0xC0-0xFF, opcode Write, type Nonblocking, the payload as buffer.
    public static func push(
        _ command: Command, payload: [UInt8], source: ModuleID = .application, destination: ModuleID = .bluetooth
    ) throws(LightXError) -> Packet {
        let header = Header(
            source: source, destination: destination, opcode: .write, hasBuffer: !payload.isEmpty,
            status: .ok, type: .nonblocking, command: command, param1: UInt32(payload.count))
        return try Packet(header: header, buffer: payload)
    }
}

extension Packet: CustomStringConvertible {
    public var description: String {
        buffer.isEmpty ? header.description : "\(header.description) [\(buffer.count) B]"
    }
}
