/// The 12-byte LightX header (sheet §1.3).
///
/// | byte | field |
/// |------|-------|
/// | 0 | source module |
/// | 1 | destination module |
/// | 2 | opcode (bits 0-5), high-priority flag 0x40, buffer flag 0x80 |
/// | 3 | status (bits 0-5), type (bits 6-7) |
/// | 4-7 | param0, little-endian: bits 0-23 address, bits 24-31 command |
/// | 8-11 | param1, little-endian: the buffer length when a buffer is present |
///
/// Bytes 2 and 3 and both params are stored as they travel, so any header decodes and re-encodes unchanged,
/// including values this library does not know.
public struct Header: Hashable, Sendable {
    /// Encoded size in bytes.
    public static let size = 12
    /// The largest value of the 24-bit address field.
    public static let maxAddress: UInt32 = 0x00FF_FFFF

    public var source: ModuleID
    public var destination: ModuleID
    /// Header byte 2 as it travels: opcode and flags.
    public var opcodeByte: UInt8
    /// Header byte 3 as it travels: status and type.
    public var statusByte: UInt8
    /// Address (bits 0-23) and command (bits 24-31).
    public var param0: UInt32
    /// The buffer length when a buffer is present; otherwise a free parameter.
    public var param1: UInt32

    /// Creates a header from its fields. `address` keeps its low 24 bits.
    public init(
        source: ModuleID, destination: ModuleID, opcode: Opcode, hasBuffer: Bool, isHighPriority: Bool = false,
        status: Status = .ok, type: PacketType = .result, command: Command, address: UInt32 = 0, param1: UInt32 = 0
    ) {
        self.source = source
        self.destination = destination
        self.opcodeByte = opcode.rawValue | (hasBuffer ? Opcode.bufferFlag : 0) | (isHighPriority ? Opcode.highPriorityFlag : 0)
        self.statusByte = status.rawValue | type.rawValue
        self.param0 = (UInt32(command.rawValue) << 24) | (address & Header.maxAddress)
        self.param1 = param1
    }

    /// Creates a header from its raw wire fields.
    public init(source: ModuleID, destination: ModuleID, opcodeByte: UInt8, statusByte: UInt8, param0: UInt32, param1: UInt32) {
        self.source = source
        self.destination = destination
        self.opcodeByte = opcodeByte
        self.statusByte = statusByte
        self.param0 = param0
        self.param1 = param1
    }

    /// Decodes the 12 bytes at `offset`. The caller guarantees 12 bytes are there.
    @inlinable
    init(unchecked bytes: UnsafeRawBufferPointer, at offset: Int) {
        source = ModuleID(rawValue: bytes[offset])
        destination = ModuleID(rawValue: bytes[offset + 1])
        opcodeByte = bytes[offset + 2]
        statusByte = bytes[offset + 3]
        param0 = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
        param1 = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self))
    }

    /// Decodes a header from the first 12 bytes of `bytes`. Throws `LightXError.truncated` when fewer are given.
    public init<C: Collection>(decoding bytes: C) throws(LightXError) where C.Element == UInt8 {
        guard bytes.count >= Header.size else {
            throw LightXError(.truncated, "a LightX header needs 12 bytes, got \(bytes.count)")
        }
        let array = Array(bytes.prefix(Header.size))
        self = array.withUnsafeBytes { Header(unchecked: $0, at: 0) }
    }

    /// The opcode (bits 0-5 of byte 2).
    public var opcode: Opcode {
        get { Opcode(rawValue: opcodeByte) }
        set { opcodeByte = (opcodeByte & ~Opcode.mask) | newValue.rawValue }
    }
    /// Whether the buffer flag (0x80) is set.
    public var hasBuffer: Bool {
        get { opcodeByte & Opcode.bufferFlag != 0 }
        set { opcodeByte = newValue ? opcodeByte | Opcode.bufferFlag : opcodeByte & ~Opcode.bufferFlag }
    }
    /// Whether the high-priority flag (0x40) is set.
    public var isHighPriority: Bool { opcodeByte & Opcode.highPriorityFlag != 0 }
    /// The status (bits 0-5 of byte 3).
    public var status: Status {
        get { Status(rawValue: statusByte) }
        set { statusByte = (statusByte & PacketType.mask) | newValue.rawValue }
    }
    /// The packet type (bits 6-7 of byte 3).
    public var type: PacketType {
        get { PacketType(rawValue: statusByte) }
        set { statusByte = (statusByte & Status.mask) | newValue.rawValue }
    }
    /// The command (bits 24-31 of param0, header byte 7).
    public var command: Command {
        get { Command(rawValue: UInt8(truncatingIfNeeded: param0 >> 24)) }
        set { param0 = (param0 & Header.maxAddress) | (UInt32(newValue.rawValue) << 24) }
    }
    /// The 24-bit address or offset (bits 0-23 of param0). Setting keeps the low 24 bits.
    public var address: UInt32 {
        get { param0 & Header.maxAddress }
        set { param0 = (param0 & ~Header.maxAddress) | (newValue & Header.maxAddress) }
    }

    /// Appends the 12 encoded bytes to `out`.
    public func encode(into out: inout [UInt8]) {
        out.append(source.rawValue)
        out.append(destination.rawValue)
        out.append(opcodeByte)
        out.append(statusByte)
        appendLittleEndian(param0, to: &out)
        appendLittleEndian(param1, to: &out)
    }

    /// The 12 encoded bytes.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Header.size)
        encode(into: &out)
        return out
    }
}

extension Header: CustomStringConvertible {
    public var description: String {
        var parts = ["\(source.name ?? "0x" + hexByte(source.rawValue))→\(destination.name ?? "0x" + hexByte(destination.rawValue))",
                     opcode.name ?? "op 0x" + hexByte(opcode.rawValue),
                     command.description]
        if address != 0 { parts.append("addr 0x" + String(address, radix: 16)) }
        if status != .ok { parts.append("status \(status)") }
        if type != .result { parts.append(type.name ?? "type 0x" + hexByte(type.rawValue)) }
        parts.append(hasBuffer ? "param1 \(param1)" : "no buffer")
        return parts.joined(separator: " ")
    }
}

func appendLittleEndian(_ value: UInt32, to out: inout [UInt8]) {
    out.append(UInt8(truncatingIfNeeded: value))
    out.append(UInt8(truncatingIfNeeded: value >> 8))
    out.append(UInt8(truncatingIfNeeded: value >> 16))
    out.append(UInt8(truncatingIfNeeded: value >> 24))
}
