import Wearable

/// A UUID as ATT carries it: 16 bits (a Bluetooth SIG number) or 128 bits.
public enum ATTUUID: Sendable, Hashable, CustomStringConvertible {
    case uuid16(UInt16)
    /// 16 bytes in written (big-endian) order, as `uuidBytes` gives them; ATT sends them least significant first.
    case uuid128([UInt8])

    /// The GATT declarations and descriptor types Tuneup uses.
    public static let primaryService = ATTUUID.uuid16(0x2800)
    public static let secondaryService = ATTUUID.uuid16(0x2801)
    public static let characteristic = ATTUUID.uuid16(0x2803)
    public static let clientConfiguration = ATTUUID.uuid16(0x2902)

    /// The bytes on the wire (little-endian).
    public var wire: [UInt8] {
        switch self {
        case let .uuid16(v): return [UInt8(v & 0xFF), UInt8(v >> 8)]
        case let .uuid128(b): return b.reversed()
        }
    }

    /// From wire bytes (2 or 16); nil for another length.
    public init?(wire: ArraySlice<UInt8>) {
        let b = Array(wire)
        switch b.count {
        case 2: self = .uuid16(UInt16(b[0]) | UInt16(b[1]) << 8)
        case 16: self = .uuid128(b.reversed())
        default: return nil
        }
    }

    /// The 128-bit form in written order (16-bit UUIDs on the Bluetooth base UUID 0000xxxx-0000-1000-8000-00805F9B34FB).
    public var bytes128: [UInt8] {
        switch self {
        case let .uuid16(v): return [0, 0, UInt8(v >> 8), UInt8(v & 0xFF), 0, 0, 0x10, 0, 0x80, 0, 0, 0x80, 0x5F, 0x9B, 0x34, 0xFB]
        case let .uuid128(b): return b
        }
    }

    public var description: String {
        switch self {
        case let .uuid16(v): return "0x" + hex16(v)
        case let .uuid128(b): return b.map(hexByte).joined()
        }
    }
}

/// One ATT PDU (Bluetooth Core spec Vol 3 Part F §3.4), as it travels on an L2CAP LE channel (CID 4): opcode, then
/// its parameters, every multi-byte field little-endian. One PDU is one L2CAP packet. docs/wearable.md §9 has hex.
public enum ATTPDU: Sendable, Hashable {
    /// 0x01: the request `requestOpcode` on `handle` failed.
    case errorResponse(requestOpcode: UInt8, handle: UInt16, error: ATTError)
    /// 0x02 / 0x03: the sender's receive MTU.
    case exchangeMTURequest(mtu: UInt16)
    case exchangeMTUResponse(mtu: UInt16)
    /// 0x04 / 0x05: the types of the attributes in a handle range (descriptor discovery).
    case findInformationRequest(start: UInt16, end: UInt16)
    case findInformationResponse([ATTHandleType])
    /// 0x06 / 0x07: attributes of a 16-bit type with a value (primary service by UUID): found handle, group end.
    case findByTypeValueRequest(start: UInt16, end: UInt16, type: UInt16, value: [UInt8])
    case findByTypeValueResponse([ATTGroup])
    /// 0x08 / 0x09: the values of the attributes of a type in a range (characteristic discovery: type 0x2803).
    case readByTypeRequest(start: UInt16, end: UInt16, type: ATTUUID)
    case readByTypeResponse([ATTHandleValue])
    /// 0x0A / 0x0B: read a value.
    case readRequest(handle: UInt16)
    case readResponse(value: [UInt8])
    /// 0x0C / 0x0D: read a value from an offset (long values).
    case readBlobRequest(handle: UInt16, offset: UInt16)
    case readBlobResponse(value: [UInt8])
    /// 0x10 / 0x11: the groups of a type in a range (primary service discovery: type 0x2800).
    case readByGroupTypeRequest(start: UInt16, end: UInt16, type: ATTUUID)
    case readByGroupTypeResponse([ATTGroupValue])
    /// 0x12 / 0x13: write with a response.
    case writeRequest(handle: UInt16, value: [UInt8])
    case writeResponse
    /// 0x52: write without a response.
    case writeCommand(handle: UInt16, value: [UInt8])
    /// 0x1B: a notification; 0x1D: an indication (confirmed by 0x1E).
    case notification(handle: UInt16, value: [UInt8])
    case indication(handle: UInt16, value: [UInt8])
    case confirmation
    /// Any other opcode, with its parameters as they came (prepare/execute write, signed write, ...).
    case other(opcode: UInt8, parameters: [UInt8])

    public enum Opcode {
        public static let errorResponse: UInt8 = 0x01
        public static let exchangeMTURequest: UInt8 = 0x02, exchangeMTUResponse: UInt8 = 0x03
        public static let findInformationRequest: UInt8 = 0x04, findInformationResponse: UInt8 = 0x05
        public static let findByTypeValueRequest: UInt8 = 0x06, findByTypeValueResponse: UInt8 = 0x07
        public static let readByTypeRequest: UInt8 = 0x08, readByTypeResponse: UInt8 = 0x09
        public static let readRequest: UInt8 = 0x0A, readResponse: UInt8 = 0x0B
        public static let readBlobRequest: UInt8 = 0x0C, readBlobResponse: UInt8 = 0x0D
        public static let readByGroupTypeRequest: UInt8 = 0x10, readByGroupTypeResponse: UInt8 = 0x11
        public static let writeRequest: UInt8 = 0x12, writeResponse: UInt8 = 0x13
        public static let writeCommand: UInt8 = 0x52
        public static let notification: UInt8 = 0x1B, indication: UInt8 = 0x1D, confirmation: UInt8 = 0x1E
    }

    public var opcode: UInt8 {
        switch self {
        case .errorResponse: return Opcode.errorResponse
        case .exchangeMTURequest: return Opcode.exchangeMTURequest
        case .exchangeMTUResponse: return Opcode.exchangeMTUResponse
        case .findInformationRequest: return Opcode.findInformationRequest
        case .findInformationResponse: return Opcode.findInformationResponse
        case .findByTypeValueRequest: return Opcode.findByTypeValueRequest
        case .findByTypeValueResponse: return Opcode.findByTypeValueResponse
        case .readByTypeRequest: return Opcode.readByTypeRequest
        case .readByTypeResponse: return Opcode.readByTypeResponse
        case .readRequest: return Opcode.readRequest
        case .readResponse: return Opcode.readResponse
        case .readBlobRequest: return Opcode.readBlobRequest
        case .readBlobResponse: return Opcode.readBlobResponse
        case .readByGroupTypeRequest: return Opcode.readByGroupTypeRequest
        case .readByGroupTypeResponse: return Opcode.readByGroupTypeResponse
        case .writeRequest: return Opcode.writeRequest
        case .writeResponse: return Opcode.writeResponse
        case .writeCommand: return Opcode.writeCommand
        case .notification: return Opcode.notification
        case .indication: return Opcode.indication
        case .confirmation: return Opcode.confirmation
        case let .other(op, _): return op
        }
    }

    /// Whether the opcode is a response (answers the one outstanding request of the bearer).
    public static func isResponse(_ opcode: UInt8) -> Bool {
        [0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x21].contains(opcode)
    }

    /// Whether the opcode is a request that must be answered (a response or an error response).
    public static func isRequest(_ opcode: UInt8) -> Bool {
        [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20].contains(opcode)
    }

    /// The handle a request names (0 when it names none), for error responses.
    public var requestHandle: UInt16 {
        switch self {
        case let .findInformationRequest(s, _), let .findByTypeValueRequest(s, _, _, _), let .readByTypeRequest(s, _, _),
             let .readByGroupTypeRequest(s, _, _):
            return s
        case let .readRequest(h), let .readBlobRequest(h, _), let .writeRequest(h, _), let .writeCommand(h, _):
            return h
        default: return 0
        }
    }
}

/// A handle and its attribute type (Find Information).
public struct ATTHandleType: Sendable, Hashable {
    public var handle: UInt16
    public var type: ATTUUID
    public init(handle: UInt16, type: ATTUUID) { self.handle = handle; self.type = type }
}

/// A found handle and the end of its group (Find By Type Value).
public struct ATTGroup: Sendable, Hashable {
    public var handle: UInt16
    public var end: UInt16
    public init(handle: UInt16, end: UInt16) { self.handle = handle; self.end = end }
}

/// A handle and its value (Read By Type).
public struct ATTHandleValue: Sendable, Hashable {
    public var handle: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, value: [UInt8]) { self.handle = handle; self.value = value }
}

/// A group's handle range and value (Read By Group Type: a service and its UUID).
public struct ATTGroupValue: Sendable, Hashable {
    public var handle: UInt16
    public var end: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, end: UInt16, value: [UInt8]) { self.handle = handle; self.end = end; self.value = value }
}

/// Encoding and decoding of ATT PDUs. Pure; never traps. List responses hold entries of one length (the encoder is
/// given them so; the decoder refuses a length field the parameters do not divide into).
public enum ATTCodec {
    /// The smallest ATT MTU of an LE link.
    public static let minimumMTU: UInt16 = 23

    public static func encode(_ pdu: ATTPDU) -> [UInt8] {
        var b: [UInt8] = [pdu.opcode]
        func u16(_ v: UInt16) { b += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        switch pdu {
        case let .errorResponse(op, handle, error):
            b.append(op)
            u16(handle)
            b.append(error.rawValue)
        case let .exchangeMTURequest(mtu), let .exchangeMTUResponse(mtu):
            u16(mtu)
        case let .findInformationRequest(s, e):
            u16(s)
            u16(e)
        case let .findInformationResponse(entries):
            b.append(entries.first?.type.wire.count == 16 ? 2 : 1)
            for entry in entries {
                u16(entry.handle)
                b += entry.type.wire
            }
        case let .findByTypeValueRequest(s, e, type, value):
            u16(s)
            u16(e)
            u16(type)
            b += value
        case let .findByTypeValueResponse(groups):
            for g in groups {
                u16(g.handle)
                u16(g.end)
            }
        case let .readByTypeRequest(s, e, type), let .readByGroupTypeRequest(s, e, type):
            u16(s)
            u16(e)
            b += type.wire
        case let .readByTypeResponse(entries):
            b.append(UInt8(truncatingIfNeeded: 2 + (entries.first?.value.count ?? 0)))
            for entry in entries {
                u16(entry.handle)
                b += entry.value
            }
        case let .readByGroupTypeResponse(entries):
            b.append(UInt8(truncatingIfNeeded: 4 + (entries.first?.value.count ?? 0)))
            for entry in entries {
                u16(entry.handle)
                u16(entry.end)
                b += entry.value
            }
        case let .readRequest(h):
            u16(h)
        case let .readResponse(value), let .readBlobResponse(value):
            b += value
        case let .readBlobRequest(h, offset):
            u16(h)
            u16(offset)
        case let .writeRequest(h, value), let .writeCommand(h, value), let .notification(h, value), let .indication(h, value):
            u16(h)
            b += value
        case .writeResponse, .confirmation:
            break
        case let .other(_, parameters):
            b += parameters
        }
        return b
    }

    /// Decodes one PDU. Throws `WearableError` `.truncated` (a field cut short, an empty packet) or `.malformed`
    /// (bytes left over, a list whose length field does not fit). An unknown opcode is `.other`, not an error.
    public static func decode(_ packet: [UInt8]) throws(WearableError) -> ATTPDU {
        guard let opcode = packet.first else { throw WearableError(.truncated, "ATT PDU: empty packet") }
        var r = WireReader(packet.dropFirst(), context: "ATT PDU 0x\(hexByte(opcode))")
        let pdu: ATTPDU
        switch opcode {
        case ATTPDU.Opcode.errorResponse:
            pdu = .errorResponse(requestOpcode: try r.u8("request opcode"), handle: try r.u16LE("handle"), error: ATTError(rawValue: try r.u8("error code")))
        case ATTPDU.Opcode.exchangeMTURequest: pdu = .exchangeMTURequest(mtu: try r.u16LE("MTU"))
        case ATTPDU.Opcode.exchangeMTUResponse: pdu = .exchangeMTUResponse(mtu: try r.u16LE("MTU"))
        case ATTPDU.Opcode.findInformationRequest:
            pdu = .findInformationRequest(start: try r.u16LE("start handle"), end: try r.u16LE("end handle"))
        case ATTPDU.Opcode.findInformationResponse:
            let format = try r.u8("format")
            guard format == 1 || format == 2 else { throw WearableError(.malformed, "ATT PDU 0x05: format \(format) is neither 1 nor 2") }
            var entries: [ATTHandleType] = []
            repeat {
                let h = try r.u16LE("handle")
                let type = ATTUUID(wire: try r.slice(format == 1 ? 2 : 16, "UUID"))!
                entries.append(ATTHandleType(handle: h, type: type))
            } while !r.isAtEnd
            pdu = .findInformationResponse(entries)
        case ATTPDU.Opcode.findByTypeValueRequest:
            pdu = .findByTypeValueRequest(start: try r.u16LE("start handle"), end: try r.u16LE("end handle"), type: try r.u16LE("type"), value: r.rest())
        case ATTPDU.Opcode.findByTypeValueResponse:
            var groups: [ATTGroup] = []
            repeat { groups.append(ATTGroup(handle: try r.u16LE("found handle"), end: try r.u16LE("group end handle"))) } while !r.isAtEnd
            pdu = .findByTypeValueResponse(groups)
        case ATTPDU.Opcode.readByTypeRequest, ATTPDU.Opcode.readByGroupTypeRequest:
            let s = try r.u16LE("start handle"), e = try r.u16LE("end handle")
            guard let type = ATTUUID(wire: r.rest()[...]) else {
                throw WearableError(.malformed, "ATT PDU 0x\(hexByte(opcode)): the type is neither a 16-bit nor a 128-bit UUID")
            }
            pdu = opcode == ATTPDU.Opcode.readByTypeRequest ? .readByTypeRequest(start: s, end: e, type: type)
                : .readByGroupTypeRequest(start: s, end: e, type: type)
        case ATTPDU.Opcode.readByTypeResponse, ATTPDU.Opcode.readByGroupTypeResponse:
            let group = opcode == ATTPDU.Opcode.readByGroupTypeResponse
            let length = Int(try r.u8("length"))
            let header = group ? 4 : 2
            guard length >= header, r.remaining > 0, r.remaining % length == 0 else {
                throw WearableError(.malformed, "ATT PDU 0x\(hexByte(opcode)): entries of \(length) bytes do not fill \(r.remaining) bytes")
            }
            var values: [ATTHandleValue] = [], groups: [ATTGroupValue] = []
            while !r.isAtEnd {
                let h = try r.u16LE("handle")
                if group {
                    let end = try r.u16LE("group end handle")
                    groups.append(ATTGroupValue(handle: h, end: end, value: Array(try r.slice(length - 4, "value"))))
                } else {
                    values.append(ATTHandleValue(handle: h, value: Array(try r.slice(length - 2, "value"))))
                }
            }
            pdu = group ? .readByGroupTypeResponse(groups) : .readByTypeResponse(values)
        case ATTPDU.Opcode.readRequest: pdu = .readRequest(handle: try r.u16LE("handle"))
        case ATTPDU.Opcode.readResponse: pdu = .readResponse(value: r.rest())
        case ATTPDU.Opcode.readBlobRequest: pdu = .readBlobRequest(handle: try r.u16LE("handle"), offset: try r.u16LE("offset"))
        case ATTPDU.Opcode.readBlobResponse: pdu = .readBlobResponse(value: r.rest())
        case ATTPDU.Opcode.writeRequest: pdu = .writeRequest(handle: try r.u16LE("handle"), value: r.rest())
        case ATTPDU.Opcode.writeResponse: pdu = .writeResponse
        case ATTPDU.Opcode.writeCommand: pdu = .writeCommand(handle: try r.u16LE("handle"), value: r.rest())
        case ATTPDU.Opcode.notification: pdu = .notification(handle: try r.u16LE("handle"), value: r.rest())
        case ATTPDU.Opcode.indication: pdu = .indication(handle: try r.u16LE("handle"), value: r.rest())
        case ATTPDU.Opcode.confirmation: pdu = .confirmation
        default: pdu = .other(opcode: opcode, parameters: r.rest())
        }
        try r.expectEnd()
        return pdu
    }
}
