/// Where a device is, as typed on the command line.
///
/// Built-in forms: `tcp:HOST:PORT` (IPv6 hosts in brackets), `serial:PATH`, `sim`, `sim:headset[:STATEFILE]` or
/// `sim:STATEFILE`, `usb:VID:PID[:SERIAL]` (hex ids), `usb:BUS-PORT[.PORT...]` (a physical port),
/// `bt:AA:BB:CC:DD:EE:FF[:CHANNEL]`. Other modules add schemes (`AddressScheme`) whose addresses are `.registered`;
/// which scheme a text belongs to is decided by `AddressSchemes` (the resolution rule is documented there).
///
/// The built-in schemes keep typed cases so that existing code matches them as before; a registered scheme needs
/// no case here, so adding one needs no edit to this module.
public enum DeviceAddress: Sendable, Hashable, CustomStringConvertible {
    /// A TCP peer.
    case tcp(host: String, port: UInt16)
    /// A serial line, tty or pty (also `/dev/rfcommN`).
    case serial(path: String)
    /// The built-in simulated headset (`sim:headset`), keeping its state in `statePath` (nil: the per-user default
    /// file).
    case simulator(statePath: String?)
    /// A USB device by vendor and product id, optionally narrowed by its serial-number string.
    case usb(vendorID: UInt16, productID: UInt16, serial: String?)
    /// A USB device by its physical location: bus number and port chain (`usb:1-2.3`).
    case usbPort(bus: UInt8, ports: [UInt8])
    /// A Bluetooth device: RFCOMM on `channel`, or the SPP service found through SDP when nil.
    case bluetooth(address: BluetoothAddress, channel: UInt8?)
    /// An address of a scheme registered outside this module (e.g. `sim:speaker`), parsed by its `AddressScheme`.
    case registered(RegisteredAddress)

    /// Parses an address of a built-in scheme (`AddressSchemes.builtIn`). Throws `TransportError` with code
    /// `.invalidAddress` and a one-line message naming the expected form.
    public init(parsing text: String) throws {
        self = try AddressSchemes.builtIn.parse(text)
    }

    /// The name of the scheme this address belongs to, under which its opener is registered with a
    /// `TransportConnector`: `tcp`, `serial`, `sim:headset`, `usb` (both forms), `bt`, or a registered scheme's name.
    public var scheme: String {
        switch self {
        case .tcp: return "tcp"
        case .serial: return "serial"
        case .simulator: return "sim:headset"
        case .usb, .usbPort: return "usb"
        case .bluetooth: return "bt"
        case let .registered(address): return address.scheme
        }
    }

    /// The canonical text form, which `init(parsing:)` (or the registry that parsed it) accepts and maps back to an
    /// equal address (IPv6 hosts in brackets, USB ids as four lowercase hex digits, Bluetooth bytes in uppercase; a
    /// simulator state file is `sim:PATH`, or `sim:headset:PATH` when PATH would read as the explicit form itself).
    public var description: String {
        switch self {
        case let .tcp(host, port):
            return host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case let .serial(path): return "serial:\(path)"
        case let .simulator(path):
            guard let path else { return "sim" }
            return path == "headset" || path.hasPrefix("headset:") ? "sim:headset:\(path)" : "sim:\(path)"
        case let .usb(vid, pid, serial):
            let ids = "usb:\(hex4(vid)):\(hex4(pid))"
            return serial.map { "\(ids):\($0)" } ?? ids
        case let .usbPort(bus, ports):
            return "usb:\(bus)-" + ports.map(String.init).joined(separator: ".")
        case let .bluetooth(address, channel):
            return channel.map { "bt:\(address):\($0)" } ?? "bt:\(address)"
        case let .registered(address): return address.text
        }
    }

    static func invalid(_ text: String, _ why: String) -> TransportError {
        TransportError(.invalidAddress, why)
    }

    static func parseSerial(_ rest: String, original text: String) throws(TransportError) -> DeviceAddress {
        guard !rest.isEmpty else {
            throw invalid(text, "serial address needs a path: expected serial:PATH, e.g. serial:/dev/ttyUSB0")
        }
        return .serial(path: rest)
    }

    /// `sim:STATEFILE` or `sim:headset:STATEFILE` (an empty file name: the per-user default).
    static func parseSimulator(_ rest: String, original text: String) -> DeviceAddress {
        .simulator(statePath: rest.isEmpty ? nil : rest)
    }

    static func parseTCP(_ rest: String, original: String) throws(TransportError) -> DeviceAddress {
        let host: String
        let portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]"), rest[rest.index(after: close)...].hasPrefix(":") else {
                throw invalid(original, "bad TCP address '\(original)': expected tcp:[IPV6]:PORT")
            }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            portText = rest[rest.index(close, offsetBy: 2)...]
        } else {
            guard let colon = rest.lastIndex(of: ":") else {
                throw invalid(original, "bad TCP address '\(original)': expected tcp:HOST:PORT")
            }
            host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty else {
            throw invalid(original, "bad TCP address '\(original)': the host is empty; expected tcp:HOST:PORT")
        }
        guard isDecimal(portText), let port = UInt16(portText) else {
            throw invalid(original, "bad TCP port '\(portText)' in '\(original)': expected tcp:HOST:PORT with PORT 0...65535")
        }
        return .tcp(host: host, port: port)
    }

    static func parseUSB(_ rest: String, original: String) throws(TransportError) -> DeviceAddress {
        if let dash = rest.firstIndex(of: "-"), !rest.contains(":") {
            guard isDecimal(rest[..<dash]), let bus = UInt8(rest[..<dash]) else {
                throw invalid(original, "bad USB bus in '\(original)': expected usb:BUS-PORT[.PORT...]")
            }
            let portParts = rest[rest.index(after: dash)...].split(separator: ".", omittingEmptySubsequences: false)
            let ports = portParts.compactMap { isDecimal($0) ? UInt8($0) : nil }
            guard !ports.isEmpty, ports.count == portParts.count, ports.count <= 7 else {
                throw invalid(original, "bad USB port chain in '\(original)': expected usb:BUS-PORT[.PORT...]")
            }
            return .usbPort(bus: bus, ports: ports)
        }
        let parts = rest.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2,
              let vid = parseHex16(parts[0]), let pid = parseHex16(parts[1]) else {
            throw invalid(original, "bad USB address '\(original)': expected usb:VID:PID[:SERIAL] with 4-digit hex ids, e.g. usb:1d6b:0104")
        }
        let serial = parts.count == 3 ? String(parts[2]) : nil
        if let serial, serial.isEmpty {
            throw invalid(original, "bad USB address '\(original)': the serial number after the second ':' is empty; expected usb:VID:PID[:SERIAL]")
        }
        return .usb(vendorID: vid, productID: pid, serial: serial)
    }

    static func parseBluetooth(_ rest: String, original: String) throws(TransportError) -> DeviceAddress {
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 || parts.count == 7,
              let address = BluetoothAddress(parts[0..<6].joined(separator: ":")) else {
            throw invalid(original, "bad Bluetooth address '\(original)': expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL]")
        }
        var channel: UInt8?
        if parts.count == 7 {
            guard isDecimal(parts[6]), let c = UInt8(parts[6]), (1...30).contains(c) else {
                throw invalid(original, "bad RFCOMM channel '\(parts[6])' in '\(original)': expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL] with CHANNEL 1...30")
            }
            channel = c
        }
        return .bluetooth(address: address, channel: channel)
    }
}

/// A 48-bit Bluetooth device address, most significant byte first as written (`AA:BB:CC:DD:EE:FF`).
public struct BluetoothAddress: Sendable, Hashable, CustomStringConvertible {
    /// The six bytes in written order (the first byte is the most significant).
    public let bytes: [UInt8]

    /// Parses `AA:BB:CC:DD:EE:FF` (hex, either case). Returns nil on any other shape.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard part.count == 2, part.allSatisfy(\.isHexDigit), let b = UInt8(part, radix: 16) else { return nil }
            bytes.append(b)
        }
        self.bytes = bytes
    }

    /// `AA:BB:CC:DD:EE:FF` in uppercase hex.
    public var description: String {
        bytes.map { b in
            let s = String(b, radix: 16, uppercase: true)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: ":")
    }
}

private func parseHex16(_ text: Substring) -> UInt16? {
    guard (1...4).contains(text.count), text.allSatisfy(\.isHexDigit) else { return nil }
    return UInt16(text, radix: 16)
}

/// Whether `text` is a non-empty run of ASCII digits (so "+1" or " 1" are not numbers here).
private func isDecimal(_ text: Substring) -> Bool {
    !text.isEmpty && text.allSatisfy { $0.isASCII && $0.isNumber }
}

/// Four lowercase hex digits, as USB ids are conventionally written.
func hex4(_ value: UInt16) -> String {
    let s = String(value, radix: 16)
    return String(repeating: "0", count: 4 - s.count) + s
}
