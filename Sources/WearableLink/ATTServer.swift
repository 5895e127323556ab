import Wearable

/// One attribute of a GATT server's database.
public struct ATTAttribute: Sendable, Hashable {
    public var handle: UInt16
    public var type: ATTUUID
    /// The value of a declaration (fixed); nil for a characteristic value or a CCCD, which the device answers.
    public var fixedValue: [UInt8]?
}

/// The device side of GATT on a real ATT bearer, pure: it answers discovery (primary services, characteristics,
/// descriptors) from a `GATTServiceLayout` and hands MTU exchange, reads and writes to the device as the same
/// `GATTPDU` requests the framed links carry, turning the device's answer into the ATT response. So one device
/// implementation (`SimulatedWearable`) serves Tuneup's framing and real ATT alike.
///
/// The database: the service declaration (0x2800) at `startHandle`; per characteristic its declaration (0x2803:
/// properties, value handle, UUID) at `valueHandle - 1`, its value, and its CCCD (0x2902) when it has one.
public struct ATTServer: Sendable {
    /// What to do with one PDU from the client.
    public enum Step: Sendable, Hashable {
        /// Send this response (answered from the database).
        case respond(ATTPDU)
        /// Ask the device; give its answer to `answer(_:)`.
        case forward(GATTPDU)
        /// Nothing to send.
        case ignore
    }

    public let layout: GATTServiceLayout
    public let attributes: [ATTAttribute]
    /// The bearer's ATT MTU (23 until exchanged).
    public private(set) var mtu: UInt16 = ATTCodec.minimumMTU
    /// The request handed to the device, waiting for its answer.
    private var pending: ATTPDU?

    public init(layout: GATTServiceLayout) {
        self.layout = layout
        var list = [ATTAttribute(handle: layout.startHandle, type: .primaryService, fixedValue: ATTUUID.uuid16(layout.serviceUUID16).wire)]
        for c in layout.characteristics {
            let declaration = [c.properties, UInt8(c.valueHandle & 0xFF), UInt8(c.valueHandle >> 8)] + ATTUUID.uuid128(c.uuid).wire
            list.append(ATTAttribute(handle: c.valueHandle - 1, type: .characteristic, fixedValue: declaration))
            list.append(ATTAttribute(handle: c.valueHandle, type: .uuid128(c.uuid), fixedValue: nil))
            if c.configurationHandle != 0 {
                list.append(ATTAttribute(handle: c.configurationHandle, type: .clientConfiguration, fixedValue: nil))
            }
        }
        attributes = list.sorted { $0.handle < $1.handle }
    }

    private func error(_ request: ATTPDU, _ handle: UInt16, _ e: ATTError) -> Step {
        .respond(.errorResponse(requestOpcode: request.opcode, handle: handle, error: e))
    }

    private func inRange(_ s: UInt16, _ e: UInt16) -> [ATTAttribute] { attributes.filter { $0.handle >= s && $0.handle <= e } }

    /// The step for one PDU from the client.
    public mutating func receive(_ pdu: ATTPDU) -> Step {
        pending = nil
        switch pdu {
        case let .exchangeMTURequest(mtu):
            pending = pdu
            return .forward(.exchangeMTURequest(mtu: mtu))
        case let .readByGroupTypeRequest(s, e, type):
            guard s != 0, s <= e else { return error(pdu, s, .invalidHandle) }
            guard type == .primaryService || type == .secondaryService else { return error(pdu, s, .unsupportedGroupType) }
            guard type == .primaryService, layout.startHandle >= s, layout.startHandle <= e else { return error(pdu, s, .attributeNotFound) }
            return .respond(.readByGroupTypeResponse([ATTGroupValue(handle: layout.startHandle, end: layout.endHandle,
                                                                    value: ATTUUID.uuid16(layout.serviceUUID16).wire)]))
        case let .findByTypeValueRequest(s, e, type, value):
            guard s != 0, s <= e else { return error(pdu, s, .invalidHandle) }
            guard type == 0x2800, value == ATTUUID.uuid16(layout.serviceUUID16).wire || value == Array(ATTUUID.uuid16(layout.serviceUUID16).bytes128.reversed()),
                  layout.startHandle >= s, layout.startHandle <= e else { return error(pdu, s, .attributeNotFound) }
            return .respond(.findByTypeValueResponse([ATTGroup(handle: layout.startHandle, end: layout.endHandle)]))
        case let .readByTypeRequest(s, e, type):
            guard s != 0, s <= e else { return error(pdu, s, .invalidHandle) }
            let found = inRange(s, e).filter { $0.type == type || $0.type.bytes128 == type.bytes128 }
            guard let first = found.first else { return error(pdu, s, .attributeNotFound) }
            guard let value = first.fixedValue else {
                pending = pdu
                return .forward(.readRequest(handle: first.handle))
            }
            // As many entries of the first one's length as fit in MTU - 2 bytes.
            var entries: [ATTHandleValue] = []
            for a in found {
                guard let v = a.fixedValue, v.count == value.count, 2 + (entries.count + 1) * (2 + v.count) <= Int(mtu) else { break }
                entries.append(ATTHandleValue(handle: a.handle, value: v))
            }
            if entries.isEmpty { entries = [ATTHandleValue(handle: first.handle, value: Array(value.prefix(Int(mtu) - 4)))] }
            return .respond(.readByTypeResponse(entries))
        case let .findInformationRequest(s, e):
            guard s != 0, s <= e else { return error(pdu, s, .invalidHandle) }
            let found = inRange(s, e)
            guard let first = found.first else { return error(pdu, s, .attributeNotFound) }
            let size = first.type.wire.count
            var entries: [ATTHandleType] = []
            for a in found {
                guard a.type.wire.count == size, 2 + (entries.count + 1) * (2 + size) <= Int(mtu) else { break }
                entries.append(ATTHandleType(handle: a.handle, type: a.type))
            }
            return .respond(.findInformationResponse(entries))
        case let .readRequest(h), let .readBlobRequest(h, _):
            guard let a = attributes.first(where: { $0.handle == h }) else { return error(pdu, h, .invalidHandle) }
            if let value = a.fixedValue { return .respond(slice(value, for: pdu)) }
            pending = pdu
            return .forward(.readRequest(handle: h))
        case let .writeRequest(h, value), let .writeCommand(h, value):
            guard let a = attributes.first(where: { $0.handle == h }) else {
                return pdu.opcode == ATTPDU.Opcode.writeCommand ? .ignore : error(pdu, h, .invalidHandle)
            }
            guard a.fixedValue == nil else { return pdu.opcode == ATTPDU.Opcode.writeCommand ? .ignore : error(pdu, h, .writeNotPermitted) }
            pending = pdu
            return .forward(.writeRequest(handle: h, value: value))
        case .confirmation, .notification, .indication, .errorResponse, .exchangeMTUResponse, .findInformationResponse,
             .findByTypeValueResponse, .readByTypeResponse, .readResponse, .readBlobResponse, .readByGroupTypeResponse, .writeResponse:
            return .ignore
        case let .other(op, _):
            // Commands (bit 6) get no answer; every other request is refused as unsupported.
            guard op & 0x40 == 0, !ATTPDU.isResponse(op) else { return .ignore }
            return .respond(.errorResponse(requestOpcode: op, handle: 0, error: .requestNotSupported))
        }
    }

    /// The ATT response to the request last forwarded, from the device's answer; nil when none is due (a write
    /// command, or nothing was forwarded).
    public mutating func answer(_ response: GATTPDU) -> ATTPDU? {
        guard let request = pending else { return nil }
        pending = nil
        if case .writeCommand = request { return nil }
        if case let .errorResponse(_, _, e, _) = response {
            return .errorResponse(requestOpcode: request.opcode, handle: request.requestHandle, error: e)
        }
        switch (request, response) {
        case let (.exchangeMTURequest(theirs), .exchangeMTUResponse(ours)):
            mtu = max(ATTCodec.minimumMTU, min(theirs, ours))
            return .exchangeMTUResponse(mtu: ours)
        case let (.readByTypeRequest, .readResponse(h, value)):
            return .readByTypeResponse([ATTHandleValue(handle: h, value: Array(value.prefix(min(Int(mtu) - 4, 253))))])
        case let (.readRequest, .readResponse(_, value)), let (.readBlobRequest, .readResponse(_, value)):
            return slice(value, for: request)
        case (.writeRequest, .writeResponse):
            return .writeResponse
        default:
            return .errorResponse(requestOpcode: request.opcode, handle: request.requestHandle, error: .unlikelyError)
        }
    }

    /// A read's answer: at most MTU - 1 bytes, from the blob offset.
    private func slice(_ value: [UInt8], for request: ATTPDU) -> ATTPDU {
        let room = Int(mtu) - 1
        guard case let .readBlobRequest(h, offset) = request else { return .readResponse(value: Array(value.prefix(room))) }
        guard Int(offset) <= value.count else { return .errorResponse(requestOpcode: request.opcode, handle: h, error: .invalidOffset) }
        return .readBlobResponse(value: Array(value[Int(offset)...].prefix(room)))
    }
}

/// How GATT travels on one link: Tuneup's framing (`GATTFraming`) on byte streams, real ATT PDUs on packet links
/// (an L2CAP LE channel, or a SOCK_SEQPACKET socket in tests).
public enum GATTWire: Sendable, Hashable {
    case framed
    case att
}

/// The device side of one link's GATT, for either wire: what arrives is cut into the device's `GATTPDU` requests
/// (ATT discovery is answered here, from the layout), and its responses and notifications are encoded for the wire.
public struct GATTServerConnection: Sendable {
    /// One thing that arrived.
    public enum Input: Sendable, Hashable {
        /// A request for the device; encode its answer with `encode(response:)`.
        case request(GATTPDU)
        /// Bytes to send back at once (answered without the device).
        case reply([UInt8])
        /// Input that was dropped, and why.
        case rejected(String)
    }

    public let wire: GATTWire
    private var decoder = GATTStreamDecoder()
    private var server: ATTServer
    private var packets: [[UInt8]] = []

    public init(wire: GATTWire, layout: GATTServiceLayout) {
        self.wire = wire
        self.server = ATTServer(layout: layout)
    }

    public mutating func append(_ chunk: [UInt8]) {
        switch wire {
        case .framed: decoder.append(chunk)
        case .att: packets.append(chunk)
        }
    }

    public mutating func next() -> Input? {
        switch wire {
        case .framed:
            switch decoder.next() {
            case nil: return nil
            case let .pdu(pdu)?: return .request(pdu)
            case let .rejected(error)?: return .rejected(error.message)
            }
        case .att:
            while !packets.isEmpty {
                let packet = packets.removeFirst()
                let pdu: ATTPDU
                do throws(WearableError) {
                    pdu = try ATTCodec.decode(packet)
                } catch {
                    // A request we cannot read still gets its answer, so the client does not wait for it.
                    if let op = packet.first, ATTPDU.isRequest(op) {
                        return .reply(ATTCodec.encode(.errorResponse(requestOpcode: op, handle: 0, error: .invalidPDU)))
                    }
                    return .rejected(error.message)
                }
                switch server.receive(pdu) {
                case let .respond(response): return .reply(ATTCodec.encode(response))
                case let .forward(request): return .request(request)
                case .ignore: continue
                }
            }
            return nil
        }
    }

    /// The bytes of the device's answer to the last `.request`; nil when nothing is sent (an ATT write command).
    public mutating func encode(response: GATTPDU) -> [UInt8]? {
        switch wire {
        case .framed: return GATTFraming.encode(response)
        case .att: return server.answer(response).map(ATTCodec.encode)
        }
    }

    /// The bytes of a notification of `handle`.
    public static func encodeNotification(handle: UInt16, value: [UInt8], wire: GATTWire) -> [UInt8] {
        switch wire {
        case .framed: return GATTFraming.encode(.notification(handle: handle, value: value))
        case .att: return ATTCodec.encode(.notification(handle: handle, value: value))
        }
    }
}
