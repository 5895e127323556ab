#if canImport(Failure)
import Failure
#endif
import Wearable

/// One GATT operation as Tuneup carries it over byte-stream links (TCP, pty, in-memory): a small framing modelled on
/// ATT (the opcodes are ATT's), so tests, demos and `sim:wearable` run the Wearable service without Bluetooth.
/// docs/wearable.md §6 gives the layout with hex examples.
///
///     frame := 0x57 | length u16 | opcode u8 | parameters      (length = 1 + parameters, 1...maxBodyLength)
///
/// Every multi-byte field of the framing is big-endian (like the Wearable payloads; this is not ATT's wire format).
/// Characteristic values travel as they are (the `Wearable` payloads); a client configuration descriptor (CCCD) value
/// is ATT's `01 00` (notifications on) or `00 00` (off).
public enum GATTPDU: Sendable, Hashable {
    /// 0x01: the request with `requestOpcode` on `handle` failed with an ATT error code, and the device's reason.
    case errorResponse(requestOpcode: UInt8, handle: UInt16, error: ATTError, reason: String)
    /// 0x02: the client's receive MTU.
    case exchangeMTURequest(mtu: UInt16)
    /// 0x03: the server's receive MTU (the link's MTU is the smaller of the two).
    case exchangeMTUResponse(mtu: UInt16)
    /// 0x0A: read the value of `handle`.
    case readRequest(handle: UInt16)
    /// 0x0B: the value of `handle`.
    case readResponse(handle: UInt16, value: [UInt8])
    /// 0x10: which services and characteristics does the device have (one round trip instead of ATT's several).
    case discoverRequest
    /// 0x11: the device's service layout.
    case discoverResponse(GATTServiceLayout)
    /// 0x12: write `value` to `handle`, with a response.
    case writeRequest(handle: UInt16, value: [UInt8])
    /// 0x13: the write to `handle` was accepted.
    case writeResponse(handle: UInt16)
    /// 0x1B: a notification of `handle`'s new value (no response).
    case notification(handle: UInt16, value: [UInt8])

    /// The opcodes, as ATT numbers them.
    public enum Opcode {
        public static let errorResponse: UInt8 = 0x01
        public static let exchangeMTURequest: UInt8 = 0x02
        public static let exchangeMTUResponse: UInt8 = 0x03
        public static let readRequest: UInt8 = 0x0A
        public static let readResponse: UInt8 = 0x0B
        public static let discoverRequest: UInt8 = 0x10
        public static let discoverResponse: UInt8 = 0x11
        public static let writeRequest: UInt8 = 0x12
        public static let writeResponse: UInt8 = 0x13
        public static let notification: UInt8 = 0x1B
    }

    /// The PDU's opcode.
    public var opcode: UInt8 {
        switch self {
        case .errorResponse: return Opcode.errorResponse
        case .exchangeMTURequest: return Opcode.exchangeMTURequest
        case .exchangeMTUResponse: return Opcode.exchangeMTUResponse
        case .readRequest: return Opcode.readRequest
        case .readResponse: return Opcode.readResponse
        case .discoverRequest: return Opcode.discoverRequest
        case .discoverResponse: return Opcode.discoverResponse
        case .writeRequest: return Opcode.writeRequest
        case .writeResponse: return Opcode.writeResponse
        case .notification: return Opcode.notification
        }
    }

    /// The request/response pairing: a request and its response (or error response) have the same key.
    /// Notifications have none.
    public var key: GATTKey? {
        switch self {
        case let .errorResponse(op, handle, _, _): return GATTKey(requestOpcode: op, handle: handle)
        case .exchangeMTURequest, .exchangeMTUResponse: return GATTKey(requestOpcode: Opcode.exchangeMTURequest, handle: 0)
        case let .readRequest(h), let .readResponse(h, _): return GATTKey(requestOpcode: Opcode.readRequest, handle: h)
        case .discoverRequest, .discoverResponse: return GATTKey(requestOpcode: Opcode.discoverRequest, handle: 0)
        case let .writeRequest(h, _), let .writeResponse(h): return GATTKey(requestOpcode: Opcode.writeRequest, handle: h)
        case .notification: return nil
        }
    }

    /// Whether a client sends it (a request) rather than a device.
    public var isRequest: Bool {
        switch self {
        case .exchangeMTURequest, .readRequest, .discoverRequest, .writeRequest: return true
        default: return false
        }
    }
}

/// What a response is matched to its request by: the request's opcode and the handle it names (0 for MTU exchange
/// and discovery).
public struct GATTKey: Sendable, Hashable, CustomStringConvertible {
    public var requestOpcode: UInt8
    public var handle: UInt16
    public init(requestOpcode: UInt8, handle: UInt16) {
        self.requestOpcode = requestOpcode
        self.handle = handle
    }

    public var description: String {
        let name: String
        switch requestOpcode {
        case GATTPDU.Opcode.exchangeMTURequest: return "MTU exchange"
        case GATTPDU.Opcode.discoverRequest: return "service discovery"
        case GATTPDU.Opcode.readRequest: name = "read"
        case GATTPDU.Opcode.writeRequest: name = "write"
        default: name = "request 0x\(hexByte(requestOpcode))"
        }
        return "\(name) of handle 0x\(hex16(handle))"
    }
}

/// An ATT error code (Core spec Vol 3 Part F 3.4.1.1), plus the application codes 0x80...0x9F the simulated
/// wearable uses for the rules of the Wearable service.
public struct ATTError: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTError(rawValue: 0x01)
    public static let readNotPermitted = ATTError(rawValue: 0x02)
    public static let writeNotPermitted = ATTError(rawValue: 0x03)
    public static let invalidPDU = ATTError(rawValue: 0x04)
    public static let requestNotSupported = ATTError(rawValue: 0x06)
    public static let invalidOffset = ATTError(rawValue: 0x07)
    public static let attributeNotFound = ATTError(rawValue: 0x0A)
    public static let attributeNotLong = ATTError(rawValue: 0x0B)
    public static let unsupportedGroupType = ATTError(rawValue: 0x10)
    public static let invalidAttributeValueLength = ATTError(rawValue: 0x0D)
    public static let unlikelyError = ATTError(rawValue: 0x0E)
    public static let valueNotAllowed = ATTError(rawValue: 0x13)
    /// Application error: a sample period the sensor does not offer.
    public static let periodNotAvailable = ATTError(rawValue: 0x80)
    /// Application error: more enabled sensors than maxActiveSensors.
    public static let tooManySensors = ATTError(rawValue: 0x81)
    /// Application error: more sensor data per transmission period than maxPayloadPerTransmissionPeriod.
    public static let payloadBudgetExceeded = ATTError(rawValue: 0x82)
    /// Application error: a sensor the device does not have.
    public static let sensorNotAvailable = ATTError(rawValue: 0x83)
    /// Application error: a gesture the device does not recognise.
    public static let gestureNotAvailable = ATTError(rawValue: 0x84)
    /// Application error: enabled sensors at different periods (they share one).
    public static let mixedPeriods = ATTError(rawValue: 0x85)

    public var description: String {
        let names: [UInt8: String] = [
            0x01: "invalid handle", 0x02: "read not permitted", 0x03: "write not permitted", 0x04: "invalid PDU",
            0x06: "request not supported", 0x07: "invalid offset", 0x0A: "attribute not found", 0x0B: "attribute not long",
            0x10: "unsupported group type", 0x0D: "invalid attribute value length", 0x0E: "unlikely error",
            0x13: "value not allowed", 0x80: "period not available", 0x81: "too many sensors",
            0x82: "payload budget exceeded", 0x83: "sensor not available", 0x84: "gesture not available",
            0x85: "mixed periods",
        ]
        return "ATT error 0x\(hexByte(rawValue))" + (names[rawValue].map { " (\($0))" } ?? "")
    }
}

/// One characteristic in a discovery response.
public struct GATTCharacteristicEntry: Sendable, Hashable {
    /// The handle of its value.
    public var valueHandle: UInt16
    /// The handle of its client configuration descriptor (0: none, the characteristic does not notify).
    public var configurationHandle: UInt16
    /// GATT properties (read 0x02, write 0x08, notify 0x10).
    public var properties: UInt8
    /// The 128-bit UUID, 16 bytes big-endian.
    public var uuid: [UInt8]

    public init(valueHandle: UInt16, configurationHandle: UInt16, properties: UInt8, uuid: [UInt8]) {
        self.valueHandle = valueHandle
        self.configurationHandle = configurationHandle
        self.properties = properties
        self.uuid = uuid
    }

    /// The Wearable characteristic with this UUID, if it is one.
    public var wearableCharacteristic: WearableCharacteristic? {
        WearableCharacteristic.allCases.first { uuidBytes($0.uuid) == uuid }
    }
}

/// A discovery response: one service (16-bit UUID) with its handle range and characteristics.
public struct GATTServiceLayout: Sendable, Hashable {
    public var serviceUUID16: UInt16
    public var startHandle: UInt16
    public var endHandle: UInt16
    public var characteristics: [GATTCharacteristicEntry]

    public init(serviceUUID16: UInt16, startHandle: UInt16, endHandle: UInt16, characteristics: [GATTCharacteristicEntry]) {
        self.serviceUUID16 = serviceUUID16
        self.startHandle = startHandle
        self.endHandle = endHandle
        self.characteristics = characteristics
    }

    /// The layout the simulated wearable uses: service 0xFDD2 at handle 0x0001, then per characteristic (in
    /// `WearableCharacteristic` order) a declaration, its value and, when it notifies, its CCCD.
    public static let wearable: GATTServiceLayout = {
        var handle: UInt16 = 1
        var entries: [GATTCharacteristicEntry] = []
        for c in WearableCharacteristic.allCases {
            let value = handle + 2  // handle + 1 is the characteristic's declaration
            let notifies = c.properties.contains(.notify)
            entries.append(GATTCharacteristicEntry(valueHandle: value, configurationHandle: notifies ? value + 1 : 0,
                                                   properties: c.properties.rawValue, uuid: uuidBytes(c.uuid)))
            handle = notifies ? value + 1 : value
        }
        return GATTServiceLayout(serviceUUID16: WearableService.uuid16, startHandle: 1, endHandle: handle, characteristics: entries)
    }()

    /// The entry of `characteristic`, nil when the layout lacks it.
    public subscript(characteristic: WearableCharacteristic) -> GATTCharacteristicEntry? {
        let uuid = uuidBytes(characteristic.uuid)
        return characteristics.first { $0.uuid == uuid }
    }
}

/// The 16 bytes of a textual 128-bit UUID (hyphens ignored); empty for a text that is not one.
public func uuidBytes(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { $0 != "-" }.utf8)
    guard digits.count == 32 else { return [] }
    var bytes: [UInt8] = []
    for i in stride(from: 0, to: 32, by: 2) {
        guard let hi = hexValue(digits[i]), let lo = hexValue(digits[i + 1]) else { return [] }
        bytes.append(hi << 4 | lo)
    }
    return bytes
}

private func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: return c - 0x30
    case 0x41...0x46: return c - 0x41 + 10
    case 0x61...0x66: return c - 0x61 + 10
    default: return nil
    }
}

/// Bytes as spaced lower-case hex ("57 00 03 0a 00 03").
public func hexString(_ bytes: [UInt8]) -> String { bytes.map(hexByte).joined(separator: " ") }
