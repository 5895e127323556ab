import Transport

/// Where a USB device sits and what its device descriptor says (read without talking to the device).
public struct USBDeviceLocation: Sendable, Hashable, CustomStringConvertible {
    /// The bus number.
    public var bus: UInt8
    /// The port chain from the root hub, outermost first; empty for a root hub itself.
    public var ports: [UInt8]
    /// The vendor id.
    public var vendorID: UInt16
    /// The product id.
    public var productID: UInt16

    /// Creates a location.
    public init(bus: UInt8, ports: [UInt8], vendorID: UInt16, productID: UInt16) {
        self.bus = bus
        self.ports = ports
        self.vendorID = vendorID
        self.productID = productID
    }

    /// The port form of the address, `usb:BUS-PORT[.PORT...]`; nil for a root hub (no port chain).
    public var portAddress: DeviceAddress? {
        ports.isEmpty ? nil : .usbPort(bus: bus, ports: ports)
    }

    /// `vvvv:pppp` in lowercase hex.
    public var ids: String { "\(usbHex4(vendorID)):\(usbHex4(productID))" }

    /// `usb:1-2.3 (1209:0001)`, or `bus 1 root hub (1d6b:0002)`.
    public var description: String {
        "\(portAddress?.description ?? "bus \(bus) root hub") (\(ids))"
    }
}

/// Which devices a `usb:` address selects.
///
/// Contract:
/// - `usb:VID:PID[:SERIAL]` matches devices with that vendor id whose product id is `PID` or `PID`'s partner in
///   the known-device table (application ↔ bootloader). The serial, when given, is compared exactly with the
///   device's serial-number string; reading that string is the caller's job (`serial`).
/// - `usb:BUS-PORT[.PORT...]` matches the device at exactly that bus and port chain, whatever its ids.
/// - Any other address kind is rejected with `.invalidAddress`.
public struct USBDeviceFilter: Sendable, Hashable {
    /// The address the filter was made from.
    public let address: DeviceAddress
    /// The serial number the device must report, if the address names one.
    public let serial: String?
    private let vendorID: UInt16?
    private let productIDs: [UInt16]
    private let bus: UInt8?
    private let ports: [UInt8]

    /// Creates the filter for `address` with the partner ids from `known`.
    ///
    /// - Throws: `TransportError(.invalidAddress)` when `address` is not a `usb:` address.
    public init(address: DeviceAddress, known: USBKnownDevices) throws(TransportError) {
        self.address = address
        switch address {
        case let .usb(vid, pid, serial):
            self.serial = serial
            vendorID = vid
            productIDs = known.matchingProductIDs(vendorID: vid, productID: pid)
            bus = nil
            ports = []
        case let .usbPort(bus, ports):
            serial = nil
            vendorID = nil
            productIDs = []
            self.bus = bus
            self.ports = ports
        default:
            throw TransportError(.invalidAddress, "'\(address)' is not a USB address; expected usb:VID:PID[:SERIAL] or usb:BUS-PORT[.PORT...]")
        }
    }

    /// Whether the device's bus, ports and ids match (the serial is checked separately).
    public func matches(_ location: USBDeviceLocation) -> Bool {
        if let vendorID {
            return location.vendorID == vendorID && productIDs.contains(location.productID)
        }
        return location.bus == bus && location.ports == ports
    }

    /// What the filter looks for, for messages: "1209:0001 or its partner 1209:0002 with serial S1",
    /// "the device at usb:1-2.3".
    public var lookingFor: String {
        guard let vendorID else { return "the device at \(address)" }
        var text = "\(usbHex4(vendorID)):\(usbHex4(productIDs.first ?? 0))"
        if productIDs.count > 1 {
            let partners = productIDs.dropFirst().map { "\(usbHex4(vendorID)):\(usbHex4($0))" }
            text += " or its \(partners.count == 1 ? "partner" : "partners") " + partners.joined(separator: ", ")
        }
        if let serial { text += " with serial \(serial)" }
        return text
    }

    /// The `.notFound` error after a scan that saw `seen` USB devices in total.
    public func notFoundError(seen: Int, waited: Duration?) -> TransportError {
        var message = "USB device \(address) not found: no device is \(lookingFor)"
        if seen == 0 {
            message += "; no USB devices are visible at all"
        } else {
            message += " (\(seen) other USB device\(seen == 1 ? "" : "s") present; `tuneup devices --all` lists them)"
        }
        if let waited, waited > .zero { message += "; waited \(formatUSBDuration(waited))" }
        return TransportError(.notFound, message)
    }

    /// The error for several matching devices (an address without a serial number, or several devices reporting
    /// the same one): names each candidate with its port address and serial so the user can pick one.
    public func ambiguityError(_ candidates: [(location: USBDeviceLocation, serial: String?)]) -> TransportError {
        let list = candidates.map { candidate -> String in
            let serial = candidate.serial.map { "serial \($0)" } ?? "serial unknown"
            return "\(candidate.location) \(serial)"
        }.joined(separator: "; ")
        let hint = serial == nil ? "add the serial (usb:VID:PID:SERIAL) or use the port form usb:BUS-PORT"
                                 : "use the port form usb:BUS-PORT"
        return TransportError(.invalidAddress, "\(address) matches \(candidates.count) USB devices: \(list); \(hint)")
    }
}

/// "2 s", "1.5 s", "250 ms".
func formatUSBDuration(_ duration: Duration) -> String {
    let ms = milliseconds(duration)
    if ms >= 1000 {
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms / 1000).\(ms % 1000 / 100) s"
    }
    return "\(ms) ms"
}

/// Whole milliseconds of a duration, clamped to 0...Int64.max / 2 (no traps on any input).
func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    if seconds < 0 || (seconds == 0 && attoseconds < 0) { return 0 }
    if seconds > Int64.max / 2_000 { return Int64.max / 2 }
    return seconds * 1000 + attoseconds / 1_000_000_000_000_000
}
