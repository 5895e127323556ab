import LightX

/// A USB SETUP packet (`struct usb_ctrlrequest`, 8 bytes, multi-byte fields little-endian).
public struct SetupPacket: Sendable, Hashable, CustomStringConvertible {
    /// bmRequestType: bit 7 direction (1 = IN, device to host), bits 5-6 type, bits 0-4 recipient.
    public var requestType: UInt8
    /// bRequest.
    public var request: UInt8
    /// wValue.
    public var value: UInt16
    /// wIndex.
    public var index: UInt16
    /// wLength: the most bytes of the data stage.
    public var length: UInt16

    /// Creates a SETUP packet from its fields.
    public init(requestType: UInt8, request: UInt8, value: UInt16, index: UInt16, length: UInt16) {
        self.requestType = requestType
        self.request = request
        self.value = value
        self.index = index
        self.length = length
    }

    /// Parses the 8 bytes at the start of `bytes`; nil when there are fewer than 8.
    public init?<C: Collection>(bytes: C) where C.Element == UInt8 {
        guard bytes.count >= 8 else { return nil }
        let b = Array(bytes.prefix(8))
        self.init(requestType: b[0], request: b[1], value: UInt16(b[2]) | UInt16(b[3]) << 8,
                  index: UInt16(b[4]) | UInt16(b[5]) << 8, length: UInt16(b[6]) | UInt16(b[7]) << 8)
    }

    /// The 8 wire bytes.
    public var bytes: [UInt8] {
        [requestType, request, UInt8(value & 0xFF), UInt8(value >> 8), UInt8(index & 0xFF), UInt8(index >> 8),
         UInt8(length & 0xFF), UInt8(length >> 8)]
    }

    /// Whether the data stage goes device → host (bit 7 of bmRequestType).
    public var isDeviceToHost: Bool { requestType & 0x80 != 0 }

    /// `SETUP 21 09 03F0 0000 000E`.
    public var description: String {
        func h(_ v: UInt16, _ digits: Int) -> String {
            let s = String(v, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, digits - s.count)) + s
        }
        return "SETUP \(h(UInt16(requestType), 2)) \(h(UInt16(request), 2)) \(h(value, 4)) \(h(index, 4)) \(h(length, 4))"
    }

    /// HID class request codes (one definition, in `HIDReports.Request`) and the standard GET_DESCRIPTOR.
    public enum Code {
        /// HID GET_REPORT (class, interface, IN: bmRequestType 0xA1).
        public static let getReport = HIDReports.Request.getReport
        /// HID SET_REPORT (class, interface, OUT: bmRequestType 0x21).
        public static let setReport = HIDReports.Request.setReport
        /// HID SET_IDLE (class, interface, OUT, no data).
        public static let setIdle = HIDReports.Request.setIdle
        /// Standard GET_DESCRIPTOR.
        public static let getDescriptor: UInt8 = 0x06
        /// bmRequestType of class requests to the interface, host → device.
        public static let classInterfaceOut = HIDReports.Request.classInterfaceOut
        /// bmRequestType of class requests to the interface, device → host.
        public static let classInterfaceIn = HIDReports.Request.classInterfaceIn
        /// bmRequestType of standard requests to the interface, device → host.
        public static let standardInterfaceIn: UInt8 = 0x81
        /// The report type in wValue's high byte for feature reports.
        public static let featureReport = HIDReports.Request.featureReportType
        /// The descriptor type in wValue's high byte for the HID report descriptor.
        public static let reportDescriptorType: UInt8 = 0x22
        /// The descriptor type in wValue's high byte for the HID class descriptor.
        public static let hidDescriptorType: UInt8 = 0x21
    }
}

/// One `struct usb_functionfs_event` read from ep0 (12 bytes: the SETUP packet, the type byte, 3 pad bytes).
public enum FunctionFSEvent: Sendable, Hashable {
    /// The function was bound to a UDC (also after a re-bind; queued events before it were dropped).
    case bind
    /// The function was unbound.
    case unbind
    /// The host set the configuration: a host attachment starts.
    case enable
    /// The configuration was dropped (reset, disconnect).
    case disable
    /// A control request for this function; must be answered exactly once before the next read for events.
    case setup(SetupPacket)
    /// The bus was suspended.
    case suspend
    /// The bus resumed.
    case resume
    /// A type this code does not know.
    case unknown(UInt8)

    /// The size of one event record.
    public static let recordSize = 12

    /// Parses the whole records in `bytes` (a trailing partial record is ignored).
    public static func parse(_ bytes: [UInt8]) -> [FunctionFSEvent] {
        var events: [FunctionFSEvent] = []
        var offset = 0
        while offset + recordSize <= bytes.count {
            let record = bytes[offset..<(offset + recordSize)]
            let type = record[record.startIndex + 8]
            switch type {
            case 0: events.append(.bind)
            case 1: events.append(.unbind)
            case 2: events.append(.enable)
            case 3: events.append(.disable)
            case 4:
                if let setup = SetupPacket(bytes: record) { events.append(.setup(setup)) }
            case 5: events.append(.suspend)
            case 6: events.append(.resume)
            default: events.append(.unknown(type))
            }
            offset += recordSize
        }
        return events
    }

    /// The kernel's name for the type (BIND, SETUP, ...).
    public var name: String {
        switch self {
        case .bind: return "BIND"
        case .unbind: return "UNBIND"
        case .enable: return "ENABLE"
        case .disable: return "DISABLE"
        case .setup: return "SETUP"
        case .suspend: return "SUSPEND"
        case .resume: return "RESUME"
        case .unknown(let t): return "event \(t)"
        }
    }
}
