import Failure

/// The errors of reading a capture: a file that is not pcapng, or is cut or damaged (exit 65: the data is wrong).
public typealias CaptureError = CodedFailure<CaptureErrors>

/// The codes of `CaptureError`.
public enum CaptureErrors: ErrorDomain {
    public static func category(of code: CaptureError.Code) -> FailureCategory { .device }
}

extension ErrorCodeIn where Domain == CaptureError {
    /// The file does not start with a pcapng Section Header Block (another format, or garbage).
    public static let notPcapNG = Self(rawValue: "not-pcapng")
    /// The file ends inside a block: a write cut short (the block is named by number and offset).
    public static let truncated = Self(rawValue: "truncated")
    /// A block's lengths or fields contradict each other.
    public static let malformed = Self(rawValue: "malformed")
    /// A big-endian section, or a pcapng version other than 1.
    public static let unsupported = Self(rawValue: "unsupported")
}

/// What the packets of an interface are (docs/capture.md §2): Wireshark's private LINKTYPE_USER0... values.
public enum CaptureLinkType: UInt16, Sendable, Hashable, CaseIterable, Codable {
    /// LightX byte stream with SPP framing (TCP, serial, pty, RFCOMM, in-memory).
    case lightXStream = 147
    /// LightX over USB HID: one feature report per packet, report id first.
    case lightXHID = 148
    /// HKWirelessHD control stream (TCP).
    case hkwhdControl = 149
    /// HKWirelessHD audio datagrams.
    case hkwhdAudio = 150
    /// HKWirelessHD clock datagrams.
    case hkwhdClock = 151
    /// Bose Wearable, Tuneup's GATT framing on a byte stream.
    case wearableStream = 152
    /// Bose Wearable over BLE: one ATT PDU per packet.
    case wearableATT = 153
    /// HKWirelessHD discovery datagrams (queries and answers).
    case hkwhdDiscovery = 154

    /// What an interface of this type carries (the start of its `if_description`).
    public var carries: String {
        switch self {
        case .lightXStream: "LightX over SPP"
        case .lightXHID: "LightX over USB HID feature reports"
        case .hkwhdControl: "HKWirelessHD control"
        case .hkwhdAudio: "HKWirelessHD audio datagrams"
        case .hkwhdClock: "HKWirelessHD clock datagrams"
        case .wearableStream: "Bose Wearable GATT framing"
        case .wearableATT: "Bose Wearable ATT"
        case .hkwhdDiscovery: "HKWirelessHD discovery datagrams"
        }
    }

    /// Whether packets are chunks of a byte stream (reassembled per direction) rather than whole messages.
    public var isByteStream: Bool { self == .lightXStream || self == .hkwhdControl || self == .wearableStream }
}

/// epb_flags' low two bits: seen from the side that wrote the capture.
public enum CaptureDirection: UInt32, Sendable, Hashable, Codable {
    /// Received by the side that wrote the capture.
    case inbound = 1
    /// Sent by it.
    case outbound = 2

    public var name: String { self == .inbound ? "inbound" : "outbound" }
}

/// Which side of a link wrote the capture (the end of `if_description`, docs/capture.md §1).
public enum CaptureRole: String, Sendable, Hashable, Codable {
    /// The tool: headset commands, station, speaker controller, wearable client.
    case host
    /// A simulated device (`tuneup sim ...`).
    case device

    /// The role an `if_description` ends with ("; host side", "; device side"); host when it says neither.
    public init(description: String) {
        self = description.hasSuffix("; device side") ? .device : .host
    }
}

/// One Interface Description Block.
public struct CaptureInterface: Sendable, Hashable {
    /// The interface id: its index among the section's interfaces.
    public var id: Int
    /// The raw link type (`CaptureLinkType` for Tuneup's own).
    public var linkType: UInt16
    /// `if_name`: the link's address.
    public var name: String
    /// `if_description`: what it carries and which side wrote it.
    public var description: String
    /// `if_tsresol` (9: nanoseconds; 6: microseconds, the default when absent).
    public var timestampResolution: UInt8

    public init(id: Int, linkType: UInt16, name: String, description: String, timestampResolution: UInt8 = 9) {
        self.id = id
        self.linkType = linkType
        self.name = name
        self.description = description
        self.timestampResolution = timestampResolution
    }

    /// Tuneup's link type of this interface, nil for another.
    public var knownLinkType: CaptureLinkType? { CaptureLinkType(rawValue: linkType) }
    /// Which side wrote it.
    public var role: CaptureRole { CaptureRole(description: description) }
}

/// One Enhanced Packet Block.
public struct CapturePacket: Sendable, Hashable {
    /// 1-based, counting Enhanced Packet Blocks (Wireshark's frame.number).
    public var number: Int
    public var interface: Int
    /// Nanoseconds since the epoch (converted from the interface's resolution).
    public var timestamp: UInt64
    /// From epb_flags; nil when the flags say neither.
    public var direction: CaptureDirection?
    public var data: [UInt8]

    public init(number: Int, interface: Int, timestamp: UInt64, direction: CaptureDirection?, data: [UInt8]) {
        self.number = number
        self.interface = interface
        self.timestamp = timestamp
        self.direction = direction
        self.data = data
    }
}

/// What a capture holds: its writer, its interfaces and its packets in file order.
public struct CaptureContents: Sendable, Hashable {
    /// `shb_userappl`.
    public var application: String?
    public var interfaces: [CaptureInterface]
    public var packets: [CapturePacket]

    public init(application: String?, interfaces: [CaptureInterface], packets: [CapturePacket]) {
        self.application = application
        self.interfaces = interfaces
        self.packets = packets
    }
}

/// The pcapng blocks Tuneup writes and reads, little-endian (docs/capture.md §1). Pure: no I/O.
public enum PcapNG {
    public static let sectionHeaderType: UInt32 = 0x0A0D_0D0A
    public static let interfaceDescriptionType: UInt32 = 1
    public static let enhancedPacketType: UInt32 = 6
    public static let byteOrderMagic: UInt32 = 0x1A2B_3C4D

    // MARK: Encoding

    /// The Section Header Block, `shb_userappl` = `application`.
    public static func sectionHeader(application: String) -> [UInt8] {
        var body: [UInt8] = []
        put32(byteOrderMagic, &body)
        put16(1, &body)
        put16(0, &body)
        put64(UInt64.max, &body)  // section length: not given
        option(4, Array(application.utf8), &body)
        endOfOptions(&body)
        return block(sectionHeaderType, body)
    }

    /// An Interface Description Block: `linkType`, snaplen 0, `if_name`, `if_description`, `if_tsresol` 9.
    public static func interfaceDescription(linkType: UInt16, name: String, description: String) -> [UInt8] {
        var body: [UInt8] = []
        put16(linkType, &body)
        put16(0, &body)
        put32(0, &body)  // snaplen: no limit
        option(2, Array(name.utf8), &body)
        option(3, Array(description.utf8), &body)
        option(9, [9], &body)
        endOfOptions(&body)
        return block(interfaceDescriptionType, body)
    }

    /// An Enhanced Packet Block: `data` whole (captured = original length), the timestamp in ns, epb_flags = direction.
    public static func enhancedPacket<C: Collection>(interface: Int, timestamp: UInt64, direction: CaptureDirection, data: C) -> [UInt8] where C.Element == UInt8 {
        let padded = (data.count + 3) & ~3
        let total = 8 + 20 + padded + 12 + 4  // header, fixed fields, data, epb_flags and end of options, trailing length
        var out: [UInt8] = []
        out.reserveCapacity(total)
        put32(enhancedPacketType, &out)
        put32(UInt32(total), &out)
        put32(UInt32(interface), &out)
        put32(UInt32(truncatingIfNeeded: timestamp >> 32), &out)
        put32(UInt32(truncatingIfNeeded: timestamp), &out)
        put32(UInt32(data.count), &out)
        put32(UInt32(data.count), &out)
        out.append(contentsOf: data)
        out.append(contentsOf: repeatElement(0, count: padded - data.count))
        put16(2, &out)  // epb_flags
        put16(4, &out)
        put32(direction.rawValue, &out)
        endOfOptions(&out)
        put32(UInt32(total), &out)
        return out
    }

    // MARK: Decoding

    /// Reads a whole capture. Throws `CaptureError`: `.notPcapNG` (no section header first), `.truncated` (the file
    /// ends inside a block, named by number and offset), `.malformed`, `.unsupported` (big-endian, another version).
    /// Blocks of other types (name resolution, statistics, ...) are skipped.
    public static func parse(_ bytes: [UInt8]) throws(CaptureError) -> CaptureContents {
        guard bytes.count >= 12, le32(bytes, 0) == sectionHeaderType else {
            throw CaptureError(.notPcapNG, bytes.isEmpty ? "the file is empty, not a pcapng capture" : "not a pcapng capture: it does not start with a Section Header Block (0a 0d 0d 0a)")
        }
        if le32(bytes, 8) != byteOrderMagic {
            if be32(bytes, 8) == byteOrderMagic {
                throw CaptureError(.unsupported, "a big-endian pcapng section: Tuneup reads little-endian captures (convert with editcap)")
            }
            throw CaptureError(.notPcapNG, "not a pcapng capture: bad byte-order magic \(hex(Array(bytes[8..<12])))")
        }
        var contents = CaptureContents(application: nil, interfaces: [], packets: [])
        var offset = 0
        var blockNumber = 0
        var sections = 0
        while offset < bytes.count {
            blockNumber += 1
            guard bytes.count - offset >= 12 else {
                throw CaptureError(.truncated, "the capture is cut inside block \(blockNumber) at offset \(offset): \(bytes.count - offset) bytes of a block header")
            }
            let type = le32(bytes, offset)
            let length = Int(le32(bytes, offset + 4))
            guard length >= 12, length % 4 == 0 else {
                throw CaptureError(.malformed, "block \(blockNumber) at offset \(offset) has a bad length \(length)")
            }
            guard bytes.count - offset >= length else {
                throw CaptureError(.truncated, "the capture is cut inside block \(blockNumber) at offset \(offset): \(bytes.count - offset) of its \(length) bytes")
            }
            guard Int(le32(bytes, offset + length - 4)) == length else {
                throw CaptureError(.malformed, "block \(blockNumber) at offset \(offset): its trailing length \(le32(bytes, offset + length - 4)) differs from \(length)")
            }
            let body = bytes[(offset + 8)..<(offset + length - 4)]
            let at = "block \(blockNumber) at offset \(offset)"
            switch type {
            case sectionHeaderType:
                sections += 1
                guard sections == 1 else {
                    throw CaptureError(.unsupported, "\(at): a second section (Tuneup writes one per file)")
                }
                guard body.count >= 16 else { throw CaptureError(.malformed, "\(at): a section header of \(length) bytes") }
                guard le16(bytes, body.startIndex + 4) == 1 else {
                    throw CaptureError(.unsupported, "\(at): pcapng version \(le16(bytes, body.startIndex + 4)).\(le16(bytes, body.startIndex + 6)), expected 1.x")
                }
                for (code, value) in try options(bytes, from: body.startIndex + 16, to: body.endIndex, at) where code == 4 {
                    contents.application = String(decoding: value, as: UTF8.self)
                }
            case interfaceDescriptionType:
                guard body.count >= 8 else { throw CaptureError(.malformed, "\(at): an interface description of \(length) bytes") }
                var interface = CaptureInterface(id: contents.interfaces.count, linkType: le16(bytes, body.startIndex), name: "", description: "", timestampResolution: 6)
                for (code, value) in try options(bytes, from: body.startIndex + 8, to: body.endIndex, at) {
                    switch code {
                    case 2: interface.name = String(decoding: value, as: UTF8.self)
                    case 3: interface.description = String(decoding: value, as: UTF8.self)
                    case 9: if let r = value.first { interface.timestampResolution = r }
                    default: break
                    }
                }
                contents.interfaces.append(interface)
            case enhancedPacketType:
                guard body.count >= 20 else { throw CaptureError(.malformed, "\(at): an enhanced packet of \(length) bytes") }
                let b = body.startIndex
                let interface = Int(le32(bytes, b))
                guard interface < contents.interfaces.count else {
                    throw CaptureError(.malformed, "\(at): a packet of interface \(interface), which no interface block described")
                }
                let raw = UInt64(le32(bytes, b + 4)) << 32 | UInt64(le32(bytes, b + 8))
                let captured = Int(le32(bytes, b + 12))
                let dataEnd = b + 20 + captured
                guard captured <= body.count - 20 else {
                    throw CaptureError(.malformed, "\(at): \(captured) captured bytes in a block of \(length)")
                }
                var direction: CaptureDirection?
                let optionsStart = b + 20 + ((captured + 3) & ~3)
                if optionsStart <= body.endIndex {
                    for (code, value) in try options(bytes, from: optionsStart, to: body.endIndex, at) where code == 2 && value.count == 4 {
                        direction = CaptureDirection(rawValue: le32(value, 0) & 3)
                    }
                }
                contents.packets.append(CapturePacket(
                    number: contents.packets.count + 1, interface: interface,
                    timestamp: nanoseconds(raw, resolution: contents.interfaces[interface].timestampResolution),
                    direction: direction, data: Array(bytes[(b + 20)..<dataEnd])))
            default:
                break
            }
            offset += length
        }
        return contents
    }

    /// Converts a timestamp in units of `resolution` (if_tsresol) to nanoseconds.
    static func nanoseconds(_ value: UInt64, resolution: UInt8) -> UInt64 {
        if resolution & 0x80 != 0 { return value }  // a power of two: not written by Tuneup; left as is
        let exponent = Int(resolution)
        if exponent == 9 { return value }
        if exponent < 9 {
            var factor: UInt64 = 1
            for _ in exponent..<9 { factor *= 10 }
            return value.multipliedReportingOverflow(by: factor).partialValue
        }
        var divisor: UInt64 = 1
        for _ in 9..<min(exponent, 28) { divisor *= 10 }
        return value / divisor
    }

    /// The options between `from` and `to`: (code, value) pairs up to opt_endofopt.
    static func options(_ bytes: [UInt8], from: Int, to: Int, _ at: String) throws(CaptureError) -> [(UInt16, [UInt8])] {
        var found: [(UInt16, [UInt8])] = []
        var i = from
        while i + 4 <= to {
            let code = le16(bytes, i)
            let length = Int(le16(bytes, i + 2))
            if code == 0 { break }
            guard i + 4 + length <= to else {
                throw CaptureError(.malformed, "\(at): option \(code) of \(length) bytes runs past the block")
            }
            found.append((code, Array(bytes[(i + 4)..<(i + 4 + length)])))
            i += 4 + ((length + 3) & ~3)
        }
        return found
    }

    // MARK: Bytes

    static func block(_ type: UInt32, _ body: [UInt8]) -> [UInt8] {
        let total = UInt32(12 + body.count)
        var out: [UInt8] = []
        out.reserveCapacity(Int(total))
        put32(type, &out)
        put32(total, &out)
        out += body
        put32(total, &out)
        return out
    }

    static func option(_ code: UInt16, _ value: [UInt8], _ out: inout [UInt8]) {
        let value = Array(value.prefix(0xFFFF))
        put16(code, &out)
        put16(UInt16(value.count), &out)
        out += value
        out += [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
    }

    static func endOfOptions(_ out: inout [UInt8]) { put32(0, &out) }

    static func put16(_ v: UInt16, _ out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: v))
        out.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    static func put32(_ v: UInt32, _ out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: v))
        out.append(UInt8(truncatingIfNeeded: v >> 8))
        out.append(UInt8(truncatingIfNeeded: v >> 16))
        out.append(UInt8(truncatingIfNeeded: v >> 24))
    }

    static func put64(_ v: UInt64, _ out: inout [UInt8]) {
        put32(UInt32(truncatingIfNeeded: v), &out)
        put32(UInt32(truncatingIfNeeded: v >> 32), &out)
    }

    static func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func le32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
    static func be32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }
}

/// Lowercase hex bytes separated by spaces.
func hex<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
    bytes.map { b in
        let s = String(b, radix: 16)
        return b < 16 ? "0" + s : s
    }.joined(separator: " ")
}
