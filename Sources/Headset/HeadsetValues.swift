import LightX

/// The identity strings a headset reports (config commands 0x01-0x06, 0x11). Nil where the device does not answer.
public struct DeviceIdentity: Sendable, Hashable, Codable {
    public var product: String?
    public var manufacturer: String?
    public var model: String?
    public var serial: String?
    public var hardware: String?
    public var firmware: String?
    public var bluetoothName: String?

    public init(product: String? = nil, manufacturer: String? = nil, model: String? = nil, serial: String? = nil,
                hardware: String? = nil, firmware: String? = nil, bluetoothName: String? = nil) {
        self.product = product
        self.manufacturer = manufacturer
        self.model = model
        self.serial = serial
        self.hardware = hardware
        self.firmware = firmware
        self.bluetoothName = bluetoothName
    }
}

/// Ambient listening ("awareness") levels per side.
public struct AmbientLevels: Sendable, Hashable, Codable {
    /// Current step of the left side, 0...steps-1.
    public var left: Int
    /// Current step of the right side, 0...steps-1.
    public var right: Int
    /// Number of levels the device offers (e.g. 8 gives steps 0...7).
    public var steps: Int
    /// The highest step a side can be set to.
    public var maxStep: Int { steps - 1 }

    public init(left: Int, right: Int, steps: Int) {
        self.left = left
        self.right = right
        self.steps = steps
    }
}

/// One graphic-EQ preset as the device names it.
public struct GraphicEQPresetInfo: Sendable, Hashable, Codable {
    public var index: Int
    public var name: String

    public init(index: Int, name: String) {
        self.index = index
        self.name = name
    }
}

/// What the device's graphic equalizer offers.
public struct GraphicEQInfo: Sendable, Hashable, Codable {
    public var bandCount: Int
    /// Lowest band gain in dB.
    public var minGain: Int
    /// Highest band gain in dB.
    public var maxGain: Int
    /// Band centre frequencies in Hz.
    public var frequencies: [Int]
    /// The presets, in index order, named by the device (or by the default names when it cannot name them).
    public var presets: [GraphicEQPresetInfo]
    /// The preset in use.
    public var currentPreset: Int

    public init(bandCount: Int, minGain: Int, maxGain: Int, frequencies: [Int], presets: [GraphicEQPresetInfo], currentPreset: Int) {
        self.bandCount = bandCount
        self.minGain = minGain
        self.maxGain = maxGain
        self.frequencies = frequencies
        self.presets = presets
        self.currentPreset = currentPreset
    }

    /// The default preset names of the reference SDK, used when a device cannot name its presets.
    public static let defaultPresetNames = ["Music", "Movie", "Voice", "User"]

    /// The index of the preset named `text` (any case) or numbered `text`; nil if there is none.
    public func presetIndex(_ text: String) -> Int? {
        if let n = Int(text), presets.contains(where: { $0.index == n }) { return n }
        return presets.first { $0.name.lowercased() == text.lowercased() }?.index
    }
}

/// A push the device sent, decoded where this library knows its meaning.
public enum HeadsetPush: Sendable, Hashable {
    /// ANC was switched on the device (0xC5).
    case ancEnabled(Bool)
    /// The awareness preset was changed on the device (0xC6).
    case awarenessPreset(AwarenessPreset)
    /// The battery level changed, in percent (0xF0, Tuneup extension).
    case batteryLevel(Int)
    /// Any other push, with its raw payload.
    case other(Command, [UInt8])

    /// Decodes `packet`, which must be a push (command 0xC0-0xFF). Payloads too short for their meaning are
    /// reported as `.other` rather than dropped.
    public init(_ packet: Packet) {
        switch packet.command {
        case .appPushANCEnable:
            if let v = try? AppSettings.ancEnabled.decode(packet.buffer) { self = .ancEnabled(v); return }
        case .appPushANCAwarenessPreset:
            if let v = try? AppSettings.awarenessPreset.decode(packet.buffer) { self = .awarenessPreset(v); return }
        case .appPushBatteryLevel:
            if let v = try? AppSettings.batteryLevel.decode(packet.buffer) { self = .batteryLevel(Int(v)); return }
        default:
            break
        }
        self = .other(packet.command, Array(packet.buffer))
    }
}

/// Everything readable from a headset at one moment (`tuneup probe`). Nil fields: the device does not support them.
public struct HeadsetSnapshot: Sendable, Hashable, Codable {
    public struct ANC: Sendable, Hashable, Codable {
        public var enabled: Bool
        /// 0.0...1.0, nil when the device does not report it.
        public var level: Float?
    }

    public struct Ambient: Sendable, Hashable, Codable {
        public var preset: String?
        public var presetValue: UInt32?
        public var left: Int?
        public var right: Int?
        public var steps: Int?
    }

    public struct EQ: Sendable, Hashable, Codable {
        public var audioPreset: String?
        public var graphic: GraphicEQInfo?
        /// Gains of the current graphic preset, in dB, band by band.
        public var gains: [Int]?
    }

    public struct Settings: Sendable, Hashable, Codable {
        public var smartButtonANC: Bool?
        public var autoOff: Bool?
        public var voicePrompt: Bool?
    }

    /// Which firmware runs; nil when the device does not say (it answers BootImageType NotSupported).
    public var mode: FirmwareMode?
    public var identity: DeviceIdentity
    public var firmwareVersion: String?
    public var batteryPercent: Int?
    public var anc: ANC?
    public var ambient: Ambient?
    public var eq: EQ
    public var settings: Settings
}

/// Which firmware a device runs: its application, or its bootloader (then no application command works).
public struct FirmwareMode: Sendable, Hashable, Codable {
    public enum Running: String, Sendable, Hashable, Codable {
        case application, bootloader
    }

    public var running: Running
    /// In the bootloader: the version of the committed application it would start, nil when there is none.
    public var committedApplication: String?

    public init(running: Running, committedApplication: String? = nil) {
        self.running = running
        self.committedApplication = committedApplication
    }
}
