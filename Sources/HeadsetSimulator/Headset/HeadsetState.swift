import LightX
import Simulator

/// The identity strings a simulated headset reports through the config commands (§4.14).
public struct HeadsetIdentity: Codable, Sendable, Hashable {
    /// 0x01 and 0x1A.
    public var productName: String
    /// 0x02 and 0x1B.
    public var manufacturerName: String
    /// 0x03 and 0x1C.
    public var modelNumber: String
    /// 0x04 and 0x1D (the latter trimmed to its 16-byte capacity).
    public var serialNumber: String
    /// 0x05 and 0x1F.
    public var hardwareVersion: String
    /// 0x06: the firmware version as a config string.
    public var firmwareVersion: String
    /// 0x11.
    public var bluetoothDisplayName: String
    /// 0x1E: the bootloader version.
    public var bootVersion: String

    /// Creates an identity from its strings.
    public init(productName: String, manufacturerName: String, modelNumber: String, serialNumber: String,
                hardwareVersion: String, firmwareVersion: String, bluetoothDisplayName: String, bootVersion: String) {
        self.productName = productName
        self.manufacturerName = manufacturerName
        self.modelNumber = modelNumber
        self.serialNumber = serialNumber
        self.hardwareVersion = hardwareVersion
        self.firmwareVersion = firmwareVersion
        self.bluetoothDisplayName = bluetoothDisplayName
        self.bootVersion = bootVersion
    }

    /// The factory identity of simulated device `index` (0-based): serial `TS1-000001` for device 0,
    /// `TS1-000002` for device 1, ...; the Bluetooth name is "Tuneup Sim" for device 0 and "Tuneup Sim N" (N = index + 1)
    /// for the others, so several simulated devices can be told apart.
    public static func factory(index: Int) -> HeadsetIdentity {
        let number = max(0, index) + 1
        let digits = String(number)
        let serial = "TS1-" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
        return HeadsetIdentity(
            productName: "Tuneup Sim Headset", manufacturerName: "Tuneup", modelNumber: "TS-1", serialNumber: serial,
            hardwareVersion: "B1", firmwareVersion: "1.4.2",
            bluetoothDisplayName: index <= 0 ? "Tuneup Sim" : "Tuneup Sim \(number)", bootVersion: "1.0.0")
    }

    /// The string the device answers for config command `command`, or nil when it defines none.
    public func string(for command: Command) -> String? {
        switch command {
        case .configProductName, .configSDHMProductName: return productName
        case .configManufacturerName, .configSDHMManufacturerName: return manufacturerName
        case .configModelNumber, .configSDHMModelNumber: return modelNumber
        case .configSerialNumber, .configSDHMSerialNumber: return serialNumber
        case .configHardwareVersion, .configSDHMHardwareVersion: return hardwareVersion
        case .configFirmwareVersion: return firmwareVersion
        case .configBTDisplayName: return bluetoothDisplayName
        case .configSDHMBootVersion: return bootVersion
        default: return nil
        }
    }
}

/// Everything a simulated headset remembers: identity, firmware version, ANC and ambient settings, graphic EQ,
/// battery and the simple switches. A plain value: the firmware mutates it, the persistence layer stores it as JSON.
///
/// Raw protocol codes (awareness preset, audio EQ preset) are stored as their u32 wire values.
public struct HeadsetState: Codable, Sendable, Hashable {
    /// Identity strings (config commands).
    public var identity: HeadsetIdentity
    /// The application firmware version (0x87, 0x3A).
    public var firmwareVersion: FirmwareVersion
    /// ANC on/off (0x85).
    public var ancEnabled: Bool
    /// ANC level, 0...1 (0x88).
    public var ancLevel: Float
    /// Awareness preset: None 0, Low 1, Medium 2, High 3 (0x86).
    public var awarenessPreset: UInt32
    /// Left ambient step, 0..<ambientSteps (0x89).
    public var ambientLeft: UInt32
    /// Right ambient step, 0..<ambientSteps (0x8A).
    public var ambientRight: UInt32
    /// The number of ambient levels (0x8B); 8 means steps 0...7.
    public var ambientSteps: UInt32
    /// Audio EQ preset: Music 0, Gaming 1, Movie 2, Conference 3 (0x81).
    public var audioEQPreset: UInt32
    /// The graphic equalizer (0x90-0x9A).
    public var graphicEQ: GraphicEQState
    /// Battery level in percent, 0...100 (0xB0).
    public var batteryPercent: UInt32
    /// Smart button (0xB5): true means the ANC button toggles ANC, false means it cycles the awareness preset.
    public var smartButton: Bool
    /// On-ear detection with auto-off (0xB6).
    public var autoOff: Bool
    /// Voice prompts (0xB7).
    public var voicePrompt: Bool

    /// The largest awareness / audio-EQ preset value (both enumerations have four values, §2.6).
    public static let maxPresetCode: UInt32 = 3

    /// Creates a state from its parts (not validated; see `validate()`).
    public init(identity: HeadsetIdentity, firmwareVersion: FirmwareVersion, ancEnabled: Bool, ancLevel: Float,
                awarenessPreset: UInt32, ambientLeft: UInt32, ambientRight: UInt32, ambientSteps: UInt32,
                audioEQPreset: UInt32, graphicEQ: GraphicEQState, batteryPercent: UInt32, smartButton: Bool,
                autoOff: Bool, voicePrompt: Bool) {
        self.identity = identity
        self.firmwareVersion = firmwareVersion
        self.ancEnabled = ancEnabled
        self.ancLevel = ancLevel
        self.awarenessPreset = awarenessPreset
        self.ambientLeft = ambientLeft
        self.ambientRight = ambientRight
        self.ambientSteps = ambientSteps
        self.audioEQPreset = audioEQPreset
        self.graphicEQ = graphicEQ
        self.batteryPercent = batteryPercent
        self.smartButton = smartButton
        self.autoOff = autoOff
        self.voicePrompt = voicePrompt
    }

    /// The factory state of simulated device `index`: firmware 1.4.2, ANC off at level 0.5, awareness None,
    /// ambient steps 3/3 of 8, audio EQ Music, the factory graphic EQ, battery 100 %, smart button = ANC,
    /// auto-off and voice prompts on.
    public static func factory(index: Int = 0) -> HeadsetState {
        HeadsetState(
            identity: .factory(index: index), firmwareVersion: FirmwareVersion(1, 4, 2), ancEnabled: false, ancLevel: 0.5,
            awarenessPreset: AwarenessPreset.none.rawValue, ambientLeft: 3, ambientRight: 3, ambientSteps: 8,
            audioEQPreset: AudioEQPreset.music.rawValue, graphicEQ: .factory, batteryPercent: 100, smartButton: true,
            autoOff: true, voicePrompt: true)
    }

    /// The state after a power cycle: RAM-only values are lost (graphic-EQ working gains fall back to the persisted
    /// ones and the default preset becomes current); everything else is non-volatile and kept.
    public func poweredOn() -> HeadsetState {
        var copy = self
        copy.graphicEQ = graphicEQ.poweredOn()
        return copy
    }

    /// Checks every value is in the range the firmware accepts; throws `.corruptState` describing the first problem.
    public func validate() throws(SimulatorError) {
        func bad(_ why: String) -> SimulatorError { SimulatorError(.corruptState, why) }
        guard ancLevel.isFinite, (0...1).contains(ancLevel) else { throw bad("ANC level \(ancLevel) is outside 0...1") }
        guard awarenessPreset <= Self.maxPresetCode else { throw bad("awareness preset \(awarenessPreset) is above 3") }
        guard audioEQPreset <= Self.maxPresetCode else { throw bad("audio EQ preset \(audioEQPreset) is above 3") }
        guard (1...UInt32(Int32.max)).contains(ambientSteps) else { throw bad("ambient step count \(ambientSteps) is invalid") }
        guard ambientLeft < ambientSteps, ambientRight < ambientSteps else {
            throw bad("ambient steps \(ambientLeft)/\(ambientRight) are not below the step count \(ambientSteps)")
        }
        guard batteryPercent <= 100 else { throw bad("battery level \(batteryPercent) is above 100") }
        try graphicEQ.validate()
    }
}
