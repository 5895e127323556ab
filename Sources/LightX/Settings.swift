/// How a host addresses its requests: the header fields that differ between byte streams and USB (§1.3).
public struct RequestStyle: Sendable, Hashable {
    /// The host's own module id.
    public var source: ModuleID
    /// The device module requests go to.
    public var destination: ModuleID
    /// The type requests carry.
    public var type: PacketType

    public init(source: ModuleID, destination: ModuleID = .application, type: PacketType) {
        self.source = source
        self.destination = destination
        self.type = type
    }

    /// Byte streams with the SPP framing: source 0x0F, type Result (byte 3 = 0x00).
    public static let spp = RequestStyle(source: .bluetooth, type: .result)
    /// USB HID reports: source 0x08, type Nonblocking (byte 3 = 0x40).
    public static let usb = RequestStyle(source: .usb, type: .nonblocking)

    /// A request in this style; nil `argument` sends the default 256 zero bytes.
    public func request(_ opcode: Opcode, _ command: Command, argument: [UInt8]? = nil, address: UInt32 = 0) throws(LightXError) -> Packet {
        try Packet.request(opcode, command, argument: argument, address: address,
                           source: source, destination: destination, type: type)
    }
}

/// A device setting: its command, which directions it allows, and how its value is encoded.
public struct Setting<Value: Sendable>: Sendable {
    /// Which opcodes the device accepts for a setting.
    public enum Access: Sendable, Hashable {
        case readOnly, writeOnly, readWrite
        public var readable: Bool { self != .writeOnly }
        public var writable: Bool { self != .readOnly }
    }

    public let command: Command
    public let access: Access
    public let codec: ValueCodec<Value>
    /// A short human name, e.g. "ANC enable".
    public let name: String

    public init(_ name: String, _ command: Command, _ access: Access, _ codec: ValueCodec<Value>) {
        self.name = name
        self.command = command
        self.access = access
        self.codec = codec
    }

    /// The read request: the default 256-byte zero buffer (§3.1).
    public func readRequest(_ style: RequestStyle = .spp) -> Packet {
        // A nil argument and a zero address are always valid.
        try! style.request(.read, command)
    }

    /// The write request carrying `value`.
    public func writeRequest(_ value: Value, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        try style.request(.write, command, argument: codec.encode(value))
    }

    /// Decodes a reply buffer (or, on the device side, a write argument).
    public func decode(_ buffer: ArraySlice<UInt8>) throws(LightXError) -> Value { try codec.decode(buffer) }
    /// Decodes a reply buffer (or, on the device side, a write argument).
    public func decode(_ buffer: [UInt8]) throws(LightXError) -> Value { try codec.decode(buffer[...]) }
    /// Encodes a value as a buffer.
    public func encode(_ value: Value) -> [UInt8] { codec.encode(value) }
}

/// Every application setting of the sheet (§4) as a typed `Setting`.
public enum AppSettings {
    public static let ancEnabled = Setting("ANC enable", .appANCEnable, .readWrite, .bool32("ANC enable"))
    /// Float32 in 0.0...1.0. The reference host only writes it; this project's devices also answer reads.
    public static let ancLevel = Setting("ANC level", .appANCLevel, .readWrite, .float32("ANC level"))
    public static let awarenessPreset = Setting<AwarenessPreset>("awareness preset", .appANCAwarenessPreset, .readWrite, .code32("awareness preset"))
    /// Per-side awareness step 0...(steps - 1). Marked read-only in the sheet's table, written by the apps (§4.4).
    public static let awarenessLeft = Setting("ambient left", .appAwarenessRawLeft, .readWrite, .uint32("ambient left"))
    public static let awarenessRight = Setting("ambient right", .appAwarenessRawRight, .readWrite, .uint32("ambient right"))
    /// The number of awareness levels (e.g. 8, so the highest step is 7).
    public static let awarenessSteps = Setting("ambient steps", .appAwarenessRawSteps, .readOnly, .int32("ambient steps"))
    public static let audioEQPreset = Setting<AudioEQPreset>("audio EQ preset", .appAudioEQPreset, .readWrite, .code32("audio EQ preset"))
    public static let firmwareVersion = Setting("firmware version", .appFirmwareVersion, .readOnly, FirmwareVersion.codec)
    /// Percent, 0...100.
    public static let batteryLevel = Setting("battery level", .appBatteryLevel, .readOnly, .uint32("battery level"))
    /// True: the smart button toggles ANC (§4.13).
    public static let smartButton = Setting("smart button", .appSmartButtonFeatureIndex, .readWrite, .bool32("smart button"))
    public static let autoOff = Setting("on-ear detection with auto-off", .appOnEarDetectionWithAutoOff, .readWrite, .bool32("auto-off"))
    public static let voicePrompt = Setting("voice prompt", .appVoicePromptEnable, .readWrite, .bool32("voice prompt"))
    public static let graphicEQLimits = Setting("graphic EQ limits", .appGraphicEQLimits, .readOnly, GraphicEQLimits.codec)
    public static let graphicEQCurrentPreset = Setting("graphic EQ current preset", .appGraphicEQCurrentPreset, .readWrite, .uint32("graphic EQ preset"))
    /// Write-only: make a preset the one the device starts with.
    public static let graphicEQDefaultPreset = Setting("graphic EQ default preset", .appGraphicEQDefaultPreset, .writeOnly, .uint32("graphic EQ preset"))
    /// Write-only: store a preset's current gains in non-volatile memory.
    public static let graphicEQPersistPreset = Setting("graphic EQ persist preset", .appGraphicEQPersistPreset, .writeOnly, .uint32("graphic EQ preset"))
    /// Write-only: restore one preset's factory gains.
    public static let graphicEQFactoryResetPreset = Setting("graphic EQ factory-reset preset", .appGraphicEQFactoryResetPreset, .writeOnly, .uint32("graphic EQ preset"))
    /// Write (u32, ignored): restore every preset's factory gains and the factory default preset.
    public static let graphicEQFactoryResetAll = Setting("graphic EQ factory reset", .appGraphicEQFactoryPresetReset, .writeOnly, .uint32("graphic EQ factory reset"))
}

/// Config strings (§4.14): NUL-terminated ASCII read with the default buffer.
public enum ConfigStrings {
    /// The identity strings every device answers, in display order, with their capacities (NUL included).
    public static let identity: [Setting<String>] = [
        Setting("product", .configProductName, .readOnly, .cString("product name")),
        Setting("manufacturer", .configManufacturerName, .readOnly, .cString("manufacturer name")),
        Setting("model", .configModelNumber, .readOnly, .cString("model number")),
        Setting("serial", .configSerialNumber, .readOnly, .cString("serial number")),
        Setting("hardware", .configHardwareVersion, .readOnly, .cString("hardware version")),
        Setting("firmware", .configFirmwareVersion, .readOnly, .cString("firmware version")),
        Setting("bt-name", .configBTDisplayName, .readOnly, .cString("Bluetooth display name")),
    ]

    /// The SDHM-prefixed variants (0x1A-0x1F); hardware version and serial have 16-byte capacities.
    public static let sdhm: [Setting<String>] = [
        Setting("sdhm-product", .configSDHMProductName, .readOnly, .cString("SDHM product name")),
        Setting("sdhm-manufacturer", .configSDHMManufacturerName, .readOnly, .cString("SDHM manufacturer name")),
        Setting("sdhm-model", .configSDHMModelNumber, .readOnly, .cString("SDHM model number")),
        Setting("sdhm-serial", .configSDHMSerialNumber, .readOnly, .cString("SDHM serial number", capacity: 16)),
        Setting("sdhm-boot-version", .configSDHMBootVersion, .readOnly, .cString("SDHM boot version")),
        Setting("sdhm-hardware", .configSDHMHardwareVersion, .readOnly, .cString("SDHM hardware version", capacity: 16)),
    ]

    /// All config strings.
    public static var all: [Setting<String>] { identity + sdhm }

    /// The setting for a config command, if it is one of the defined strings.
    public static func setting(for command: Command) -> Setting<String>? {
        all.first { $0.command == command }
    }
}

/// Requests whose read carries an argument (the graphic-EQ band queries and the preset-name extension).
public enum GraphicEQRequests {
    /// Read the gains of `preset` (0x94): u32 preset, u32 band count, count zero gains (48 bytes for 10 bands).
    public static func readPresetGains(preset: UInt32, bandCount: Int = 10, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        let count = min(max(bandCount, 0), GraphicEQPresetGains.maxBands)
        return try style.request(.read, .appGraphicEQPresetBandSettings,
                                 argument: GraphicEQPresetGains.codec.encode(GraphicEQPresetGains(preset: preset, gains: Array(repeating: 0, count: count))))
    }

    /// Write all gains of a preset (0x94).
    public static func writePresetGains(_ value: GraphicEQPresetGains, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        guard value.gains.count <= GraphicEQPresetGains.maxBands else {
            throw LightXError(.bufferTooLarge, "\(value.gains.count) bands do not fit a LightX buffer (at most \(GraphicEQPresetGains.maxBands))")
        }
        return try style.request(.write, .appGraphicEQPresetBandSettings, argument: GraphicEQPresetGains.codec.encode(value))
    }

    /// Read one band of a preset (0x95): u32 preset, u32 band, u32 0.
    public static func readBand(preset: UInt32, band: UInt32, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        try style.request(.read, .appGraphicEQBand, argument: GraphicEQBandGain.codec.encode(GraphicEQBandGain(preset: preset, band: band, gain: 0)))
    }

    /// Write one band of a preset (0x95).
    public static func writeBand(_ value: GraphicEQBandGain, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        try style.request(.write, .appGraphicEQBand, argument: GraphicEQBandGain.codec.encode(value))
    }

    /// Read the band centre frequencies (0x97): u32 band count, count zero words (44 bytes for 10 bands).
    public static func readBandFrequencies(bandCount: Int = 10, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        let count = min(max(bandCount, 0), GraphicEQPresetGains.maxBands)
        return try style.request(.read, .appGraphicEQBandFreq,
                                 argument: GraphicEQBandFrequencies.codec.encode(Array(repeating: 0, count: count)))
    }

    /// Tuneup extension 0x9A: read the name of `preset`. Argument u32 preset; reply NUL-terminated UTF-8.
    public static func readPresetName(preset: UInt32, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        var w = ArgumentWriter()
        w.u32(preset)
        return try style.request(.read, .appGraphicEQPresetName, argument: w.bytes)
    }

    /// Codec of the preset-name reply (at most 32 bytes with its NUL).
    public static let presetNameCodec = ValueCodec<String>.cString("graphic EQ preset name", capacity: 32)
}
