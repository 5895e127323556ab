/// A one-byte LightX code (module id, opcode, status, packet type, command, partition).
///
/// Every code is a struct over its raw byte rather than a closed enum: a device may send a value this
/// library does not know, and that value must survive decoding, be reported, and re-encode unchanged.
public protocol LightXCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible
where RawValue: FixedWidthInteger & UnsignedInteger & Sendable {
    init(rawValue: RawValue)
    /// Names of the values the protocol sheet defines, keyed by raw value.
    static var knownNames: [RawValue: String] { get }
}

extension LightXCode {
    /// The sheet's name for this value, or nil when the value is unknown.
    public var name: String? { Self.knownNames[rawValue] }
    /// Whether the protocol sheet defines this value.
    public var isKnown: Bool { Self.knownNames[rawValue] != nil }
    /// `Name (0xNN)` for known byte codes, `Name (N)` for 32-bit values, `unknown ...` otherwise.
    public var description: String {
        let raw = RawValue.bitWidth == 8 ? "0x" + hexByte(UInt8(truncatingIfNeeded: rawValue)) : String(rawValue)
        return name.map { "\($0) (\(raw))" } ?? "unknown \(raw)"
    }
    /// All values the sheet defines, in ascending order.
    public static var allKnown: [Self] { knownNames.keys.sorted().map(Self.init(rawValue:)) }
    /// The known value whose name matches `text` ignoring case and `-`/`_`, or whose raw value is `text`.
    public static func named(_ text: String) -> Self? {
        let key = normalizedName(text)
        if let match = knownNames.first(where: { normalizedName($0.value) == key }) { return Self(rawValue: match.key) }
        return RawValue(text).map(Self.init(rawValue:))
    }
}

func normalizedName(_ s: String) -> String {
    String(s.lowercased().filter { $0 != "-" && $0 != "_" && $0 != " " })
}

/// A LightX module identifier (header bytes 0 and 1). Sheet §2.1.
public struct ModuleID: LightXCode {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let none = ModuleID(rawValue: 0x00)
    public static let memory = ModuleID(rawValue: 0x01)
    public static let register = ModuleID(rawValue: 0x02)
    public static let dsp = ModuleID(rawValue: 0x03)
    public static let spim = ModuleID(rawValue: 0x04)
    public static let file = ModuleID(rawValue: 0x05)
    public static let flash = ModuleID(rawValue: 0x06)
    public static let twim = ModuleID(rawValue: 0x07)
    /// The host id used over USB; selects raw (unframed) packets.
    public static let usb = ModuleID(rawValue: 0x08)
    public static let jtag = ModuleID(rawValue: 0x09)
    public static let log = ModuleID(rawValue: 0x0A)
    public static let uart = ModuleID(rawValue: 0x0B)
    public static let spis = ModuleID(rawValue: 0x0C)
    public static let twis = ModuleID(rawValue: 0x0D)
    public static let audio = ModuleID(rawValue: 0x0E)
    /// The host id used over Bluetooth SPP (and every byte stream); selects the SPP framing.
    public static let bluetooth = ModuleID(rawValue: 0x0F)
    public static let anc = ModuleID(rawValue: 0x10)
    public static let dvm = ModuleID(rawValue: 0x11)
    public static let nvm = ModuleID(rawValue: 0x12)
    public static let hostMessageHandler = ModuleID(rawValue: 0x14)
    /// The headset application: destination of every SDHM request.
    public static let application = ModuleID(rawValue: 0x40)
    public static let localhost = ModuleID(rawValue: 0x42)
    /// The AV35xx dialect's application id (§7.2). Not in the SDHM enumeration.
    public static let av35xxApplication = ModuleID(rawValue: 0x43)

    public static let knownNames: [UInt8: String] = [
        0x00: "None", 0x01: "Memory", 0x02: "Register", 0x03: "DSP", 0x04: "SPIM", 0x05: "File",
        0x06: "Flash", 0x07: "TWIM", 0x08: "USB", 0x09: "JTAG", 0x0A: "Log", 0x0B: "UART", 0x0C: "SPIS",
        0x0D: "TWIS", 0x0E: "Audio", 0x0F: "Bluetooth", 0x10: "ANC", 0x11: "DVM", 0x12: "NVM",
        0x14: "HostMessageHandler", 0x40: "Application", 0x42: "Localhost",
    ]
}

/// A LightX opcode: bits 0-5 of header byte 2. Sheet §2.2.
public struct Opcode: LightXCode {
    public let rawValue: UInt8
    /// Keeps the low six bits of `rawValue`.
    public init(rawValue: UInt8) { self.rawValue = rawValue & Opcode.mask }

    public static let none = Opcode(rawValue: 0x00)
    public static let read = Opcode(rawValue: 0x01)
    public static let write = Opcode(rawValue: 0x02)
    public static let set = Opcode(rawValue: 0x03)
    public static let get = Opcode(rawValue: 0x04)
    public static let request = Opcode(rawValue: 0x05)

    /// Mask of the opcode bits in header byte 2.
    public static let mask: UInt8 = 0x3F
    /// Header byte 2 flag: high priority (never set by the reference host).
    public static let highPriorityFlag: UInt8 = 0x40
    /// Header byte 2 flag: a data buffer follows the header.
    public static let bufferFlag: UInt8 = 0x80

    public static let knownNames: [UInt8: String] = [
        0x00: "None", 0x01: "Read", 0x02: "Write", 0x03: "Set", 0x04: "Get", 0x05: "Request", 0x3F: "Mask",
    ]
}

/// A LightX status: bits 0-5 of header byte 3. Sheet §2.3.
public struct Status: LightXCode {
    public let rawValue: UInt8
    /// Keeps the low six bits of `rawValue`.
    public init(rawValue: UInt8) { self.rawValue = rawValue & Status.mask }

    /// Success (also called Complete).
    public static let ok = Status(rawValue: 0x00)
    public static let fail = Status(rawValue: 0x01)
    /// Accepted, final reply follows (also called Continue).
    public static let pending = Status(rawValue: 0x02)
    public static let notFound = Status(rawValue: 0x03)
    public static let notSupported = Status(rawValue: 0x04)
    public static let exceededLimits = Status(rawValue: 0x05)
    public static let notReady = Status(rawValue: 0x06)
    public static let commFailure = Status(rawValue: 0x07)

    /// Mask of the status bits in header byte 3.
    public static let mask: UInt8 = 0x3F

    public static let knownNames: [UInt8: String] = [
        0x00: "Ok", 0x01: "Fail", 0x02: "Pending", 0x03: "NotFound", 0x04: "NotSupported",
        0x05: "ExceededLimits", 0x06: "NotReady", 0x07: "CommFailure", 0x3F: "Mask",
    ]
}

/// A LightX packet type: bits 6-7 of header byte 3, kept in place (0x00, 0x40, 0x80, 0xC0). Sheet §2.4.
public struct PacketType: LightXCode {
    public let rawValue: UInt8
    /// Keeps the two high bits of `rawValue`.
    public init(rawValue: UInt8) { self.rawValue = rawValue & PacketType.mask }

    /// What Bluetooth requests carry (byte 3 = 0x00) and what replies carry.
    public static let result = PacketType(rawValue: 0x00)
    /// What USB requests carry (byte 3 = 0x40); this project also marks device pushes with it.
    public static let nonblocking = PacketType(rawValue: 0x40)
    public static let blocking = PacketType(rawValue: 0x80)

    /// Mask of the type bits in header byte 3.
    public static let mask: UInt8 = 0xC0

    public static let knownNames: [UInt8: String] = [
        0x00: "Result", 0x40: "Nonblocking", 0x80: "Blocking", 0xC0: "Mask",
    ]
}

/// A flash partition id (defined by the sheet, unused on the wire by the reference host). Sheet §2.5.
public struct FlashPartition: LightXCode {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let bootloader = FlashPartition(rawValue: 0x00)
    public static let bootData = FlashPartition(rawValue: 0x01)
    public static let factoryImage = FlashPartition(rawValue: 0x02)
    public static let updateImage = FlashPartition(rawValue: 0x03)
    public static let resource = FlashPartition(rawValue: 0x04)

    public static let knownNames: [UInt8: String] = [
        0x00: "Bootloader", 0x01: "BootData", 0x02: "FactoryImage", 0x03: "UpdateImage", 0x04: "Resource",
    ]
}

/// Two uppercase hex digits.
func hexByte(_ b: UInt8) -> String {
    let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F"]
    return String([digits[Int(b >> 4)], digits[Int(b & 0x0F)]])
}

/// Lowercase hex with spaces between bytes (`ff 5a 00 00`), for logs and error messages.
public func hexString<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
    bytes.map { hexByte($0).lowercased() }.joined(separator: " ")
}
