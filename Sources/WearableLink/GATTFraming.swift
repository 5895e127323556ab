import Wearable

/// Encoding and decoding of `GATTPDU` frames (see `GATTPDU` for the layout). Pure; never traps.
public enum GATTFraming {
    /// The first byte of every frame ('W').
    public static let magic: UInt8 = 0x57
    /// Bytes before the body: magic and length.
    public static let headerLength = 3
    /// The longest body (opcode and parameters): enough for ATT's largest MTU (517) plus headroom.
    public static let maxBodyLength = 600
    /// The longest reason text of an error response, in UTF-8 bytes (longer reasons are cut).
    public static let maxReasonLength = 200

    /// The frame of `pdu`.
    public static func encode(_ pdu: GATTPDU) -> [UInt8] {
        let body = encodeBody(pdu)
        return [magic, UInt8(truncatingIfNeeded: body.count >> 8), UInt8(truncatingIfNeeded: body.count)] + body
    }

    /// Opcode and parameters of `pdu`.
    public static func encodeBody(_ pdu: GATTPDU) -> [UInt8] {
        var b: [UInt8] = [pdu.opcode]
        func u16(_ v: UInt16) { b += [UInt8(v >> 8), UInt8(v & 0xFF)] }
        switch pdu {
        case let .errorResponse(op, handle, error, reason):
            b.append(op)
            u16(handle)
            b.append(error.rawValue)
            b += Array(reason.utf8.prefix(maxReasonLength))
        case let .exchangeMTURequest(mtu), let .exchangeMTUResponse(mtu):
            u16(mtu)
        case let .readRequest(handle), let .writeResponse(handle):
            u16(handle)
        case let .readResponse(handle, value), let .writeRequest(handle, value), let .notification(handle, value):
            u16(handle)
            b += value
        case .discoverRequest:
            break
        case let .discoverResponse(layout):
            u16(layout.serviceUUID16)
            u16(layout.startHandle)
            u16(layout.endHandle)
            for c in layout.characteristics {
                u16(c.valueHandle)
                u16(c.configurationHandle)
                b.append(c.properties)
                b += c.uuid.count == 16 ? c.uuid : [UInt8](repeating: 0, count: 16)
            }
        }
        return b
    }

    /// Decodes one body (opcode and parameters). Throws `WearableError` `.truncated` (a field cut short) or
    /// `.malformed` (an unknown opcode, bytes left over, a reason that is not UTF-8).
    public static func decodeBody(_ body: ArraySlice<UInt8>) throws(WearableError) -> GATTPDU {
        guard let opcode = body.first else { throw WearableError(.truncated, "GATT frame: empty body") }
        var r = WireReader(body.dropFirst(), context: "GATT PDU 0x\(hexByte(opcode))")
        let pdu: GATTPDU
        switch opcode {
        case GATTPDU.Opcode.errorResponse:
            let op = try r.u8("request opcode"), handle = try r.u16("handle"), code = try r.u8("error code")
            let rest = r.rest()
            guard rest.count <= maxReasonLength, let reason = String(validating: rest, as: UTF8.self) else {
                throw WearableError(.malformed, "GATT error response: the reason is not UTF-8 of at most \(maxReasonLength) bytes")
            }
            pdu = .errorResponse(requestOpcode: op, handle: handle, error: ATTError(rawValue: code), reason: reason)
        case GATTPDU.Opcode.exchangeMTURequest: pdu = .exchangeMTURequest(mtu: try r.u16("MTU"))
        case GATTPDU.Opcode.exchangeMTUResponse: pdu = .exchangeMTUResponse(mtu: try r.u16("MTU"))
        case GATTPDU.Opcode.readRequest: pdu = .readRequest(handle: try r.u16("handle"))
        case GATTPDU.Opcode.readResponse: pdu = .readResponse(handle: try r.u16("handle"), value: r.rest())
        case GATTPDU.Opcode.discoverRequest: pdu = .discoverRequest
        case GATTPDU.Opcode.discoverResponse:
            let uuid = try r.u16("service UUID"), start = try r.u16("start handle"), end = try r.u16("end handle")
            var entries: [GATTCharacteristicEntry] = []
            while !r.isAtEnd {
                let value = try r.u16("value handle"), cccd = try r.u16("CCCD handle"), props = try r.u8("properties")
                let id = try r.slice(16, "characteristic UUID")
                entries.append(GATTCharacteristicEntry(valueHandle: value, configurationHandle: cccd, properties: props, uuid: Array(id)))
            }
            pdu = .discoverResponse(GATTServiceLayout(serviceUUID16: uuid, startHandle: start, endHandle: end, characteristics: entries))
        case GATTPDU.Opcode.writeRequest: pdu = .writeRequest(handle: try r.u16("handle"), value: r.rest())
        case GATTPDU.Opcode.writeResponse: pdu = .writeResponse(handle: try r.u16("handle"))
        case GATTPDU.Opcode.notification: pdu = .notification(handle: try r.u16("handle"), value: r.rest())
        default:
            throw WearableError(.malformed, "GATT frame: unknown opcode 0x\(hexByte(opcode))")
        }
        try r.expectEnd()
        return pdu
    }

    /// Decodes exactly one whole frame (see `GATTDeframer` for a stream).
    public static func decode(_ frame: [UInt8]) throws(WearableError) -> GATTPDU {
        guard frame.count >= headerLength else { throw WearableError(.truncated, "GATT frame: \(frame.count) bytes, no header") }
        guard frame[0] == magic else { throw WearableError(.malformed, "GATT frame: first byte 0x\(hexByte(frame[0])) is not 0x57") }
        let length = Int(frame[1]) << 8 | Int(frame[2])
        guard length == frame.count - headerLength else {
            throw WearableError(length > frame.count - headerLength ? .truncated : .malformed,
                                "GATT frame: length \(length), \(frame.count - headerLength) bytes follow")
        }
        return try decodeBody(frame[headerLength...])
    }
}

/// Cuts `GATTPDU`s out of a byte stream with arbitrary chunk boundaries. Bytes before a magic byte are skipped and
/// counted; a length of 0 or above `maxBodyLength` is taken for noise (the magic byte is skipped and the search goes
/// on); a whole frame whose body does not decode is reported as `.rejected` and skipped. Never traps.
public struct GATTStreamDecoder: Sendable {
    /// What was skipped.
    public struct Statistics: Sendable, Hashable {
        /// Bytes skipped while looking for a frame.
        public var skippedBytes = 0
        /// Whole frames whose body did not decode.
        public var badFrames = 0
        public init() {}
    }

    /// One result.
    public enum Item: Sendable, Hashable {
        case pdu(GATTPDU)
        case rejected(WearableError)
    }

    private var buffer: [UInt8] = []
    private var start = 0
    public private(set) var statistics = Statistics()

    public init() {}

    public mutating func append(_ chunk: [UInt8]) {
        if start > 4096 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer += chunk
    }

    /// The next PDU or rejected frame; nil when more bytes are needed.
    public mutating func next() -> Item? {
        while true {
            while start < buffer.count, buffer[start] != GATTFraming.magic {
                start += 1
                statistics.skippedBytes += 1
            }
            guard buffer.count - start >= GATTFraming.headerLength else { return nil }
            let length = Int(buffer[start + 1]) << 8 | Int(buffer[start + 2])
            guard length >= 1, length <= GATTFraming.maxBodyLength else {
                start += 1
                statistics.skippedBytes += 1
                continue
            }
            guard buffer.count - start >= GATTFraming.headerLength + length else { return nil }
            let bodyStart = start + GATTFraming.headerLength
            let body = buffer[bodyStart..<(bodyStart + length)]
            start = bodyStart + length
            if start == buffer.count {
                defer { buffer = []; start = 0 }
                return decode(body)
            }
            return decode(body)
        }
    }

    private mutating func decode(_ body: ArraySlice<UInt8>) -> Item {
        do throws(WearableError) {
            return .pdu(try GATTFraming.decodeBody(body))
        } catch {
            statistics.badFrames += 1
            return .rejected(error)
        }
    }

    /// Gives up a partial frame (its length may be corrupt): skips its magic byte. True when bytes were waiting.
    public mutating func abandonPartialFrame() -> Bool {
        guard start < buffer.count else { return false }
        start += 1
        statistics.skippedBytes += 1
        return true
    }

    /// Bytes held for an incomplete frame.
    public var pendingBytes: Int { buffer.count - start }
}
