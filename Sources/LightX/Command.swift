/// A LightX command byte: bits 24-31 of param0, header byte 7. Sheet §2.7.
///
/// Ranges: Config 0x01-0x1F, Boot 0x20-0x3F, Diagnostic 0x40-0x7E (undefined in the reference host),
/// App 0x7F-0xBF (0x7F is AppShutdown), Push 0xC0-0xFF.
public struct Command: LightXCode {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The range a command byte falls into.
    public enum Group: String, Sendable, Hashable, CaseIterable {
        case reserved, config, boot, diagnostic, app, push
    }

    /// The group of this command byte, decided by its range alone.
    public var group: Group {
        switch rawValue {
        case 0x00: return .reserved
        case 0x01...0x1F: return .config
        case 0x20...0x3F: return .boot
        case 0x40...0x7E: return .diagnostic
        case 0x7F...0xBF: return .app
        default: return .push
        }
    }

    /// Whether a packet carrying this command is a device push (§3.3: command byte 0xC0-0xFF).
    public var isPush: Bool { rawValue >= 0xC0 }

    // MARK: Config (0x01-0x1F): NUL-terminated ASCII strings, §4.14.
    public static let configProductName = Command(rawValue: 0x01)
    public static let configManufacturerName = Command(rawValue: 0x02)
    public static let configModelNumber = Command(rawValue: 0x03)
    public static let configSerialNumber = Command(rawValue: 0x04)
    public static let configHardwareVersion = Command(rawValue: 0x05)
    public static let configFirmwareVersion = Command(rawValue: 0x06)
    public static let configBTDisplayName = Command(rawValue: 0x11)
    public static let configSDHMProductName = Command(rawValue: 0x1A)
    public static let configSDHMManufacturerName = Command(rawValue: 0x1B)
    public static let configSDHMModelNumber = Command(rawValue: 0x1C)
    public static let configSDHMSerialNumber = Command(rawValue: 0x1D)
    public static let configSDHMBootVersion = Command(rawValue: 0x1E)
    public static let configSDHMHardwareVersion = Command(rawValue: 0x1F)

    // MARK: Boot (0x20-0x3F), §4.15 and §6.
    public static let bootImageType = Command(rawValue: 0x20)
    public static let bootAuthStatus = Command(rawValue: 0x22)
    public static let bootAuthChallenge = Command(rawValue: 0x23)
    public static let bootAuthResponse = Command(rawValue: 0x24)
    public static let bootJumpToBootloader = Command(rawValue: 0x25)
    public static let bootEraseImageSector = Command(rawValue: 0x26)
    public static let bootWriteImage = Command(rawValue: 0x27)
    public static let bootReadImage = Command(rawValue: 0x28)
    public static let bootCommitImage = Command(rawValue: 0x29)
    public static let bootJumpToApplication = Command(rawValue: 0x2A)
    public static let bootVerifyCRC = Command(rawValue: 0x2C)
    public static let bootEraseRsrc1Sector = Command(rawValue: 0x2D)
    public static let bootWriteRsrc1 = Command(rawValue: 0x2E)
    public static let bootReadRsrc1 = Command(rawValue: 0x2F)
    public static let bootEraseRsrc2Sector = Command(rawValue: 0x30)
    public static let bootWriteRsrc2 = Command(rawValue: 0x31)
    public static let bootReadRsrc2 = Command(rawValue: 0x32)
    public static let bootReadVersionFile = Command(rawValue: 0x3A)
    /// Tuneup extension (reserved in the reference protocol): read the bootloader's capabilities.
    /// Reply: u32 flags (bit 0: addressed erase), u32 request queue depth. A device without it answers NotSupported.
    public static let bootCapabilities = Command(rawValue: 0x3B)

    // MARK: App (0x7F-0xBF), §4.
    /// Asks the application to shut down before a jump to the bootloader (outside the 0x80 App range).
    public static let appShutdown = Command(rawValue: 0x7F)
    public static let app0x80 = Command(rawValue: 0x80)
    public static let appAudioEQPreset = Command(rawValue: 0x81)
    public static let appMicEQ = Command(rawValue: 0x82)
    public static let appSysState = Command(rawValue: 0x83)
    public static let appIsHeadsetOn = Command(rawValue: 0x84)
    public static let appANCEnable = Command(rawValue: 0x85)
    public static let appANCAwarenessPreset = Command(rawValue: 0x86)
    public static let appFirmwareVersion = Command(rawValue: 0x87)
    public static let appANCLevel = Command(rawValue: 0x88)
    public static let appAwarenessRawLeft = Command(rawValue: 0x89)
    public static let appAwarenessRawRight = Command(rawValue: 0x8A)
    public static let appAwarenessRawSteps = Command(rawValue: 0x8B)
    public static let appSpatialPreset = Command(rawValue: 0x8C)
    public static let appGraphicEQSetting = Command(rawValue: 0x8E)
    public static let appGraphicEQLimits = Command(rawValue: 0x90)
    public static let appGraphicEQDefaultPreset = Command(rawValue: 0x91)
    public static let appGraphicEQCurrentPreset = Command(rawValue: 0x92)
    public static let appGraphicEQFactoryPresetReset = Command(rawValue: 0x93)
    public static let appGraphicEQPresetBandSettings = Command(rawValue: 0x94)
    public static let appGraphicEQBand = Command(rawValue: 0x95)
    public static let appGraphicEQPersistPreset = Command(rawValue: 0x96)
    public static let appGraphicEQBandFreq = Command(rawValue: 0x97)
    public static let appGraphicEQFactoryResetPreset = Command(rawValue: 0x98)
    public static let app0x99 = Command(rawValue: 0x99)
    /// Tuneup extension (not in the reference protocol): read the name of a graphic-EQ preset.
    /// Request: u32 preset index (4 bytes). Reply: NUL-terminated UTF-8 name. A device without it answers NotSupported.
    public static let appGraphicEQPresetName = Command(rawValue: 0x9A)
    public static let appSensorStatus = Command(rawValue: 0xA0)
    public static let appTapThresholdHigh = Command(rawValue: 0xA1)
    public static let appTapThresholdLow = Command(rawValue: 0xA2)
    public static let appTapPulseWindow = Command(rawValue: 0xA3)
    public static let appTapTimeout = Command(rawValue: 0xA4)
    public static let appTapDebounce = Command(rawValue: 0xA5)
    public static let appTapIdleDebounce = Command(rawValue: 0xA6)
    public static let appTapCommit = Command(rawValue: 0xA7)
    public static let appBatteryLevel = Command(rawValue: 0xB0)
    public static let app0xB1 = Command(rawValue: 0xB1)
    /// 0xB2: the JBL apps use it as "start auto-calibration".
    public static let appStartAutoCalibration = Command(rawValue: 0xB2)
    /// 0xB3: the JBL apps use it as "calibration status".
    public static let appCalibrationStatus = Command(rawValue: 0xB3)
    public static let app0xB4 = Command(rawValue: 0xB4)
    public static let appSmartButtonFeatureIndex = Command(rawValue: 0xB5)
    public static let appOnEarDetectionWithAutoOff = Command(rawValue: 0xB6)
    public static let appVoicePromptEnable = Command(rawValue: 0xB7)

    // MARK: Push (0xC0-0xFF), §3.3.
    public static let appPushHeartrateSensorData = Command(rawValue: 0xC0)
    public static let appPushANCEnable = Command(rawValue: 0xC5)
    public static let appPushANCAwarenessPreset = Command(rawValue: 0xC6)
    public static let appPush9AxisRawData = Command(rawValue: 0xC7)
    public static let appPushTapDetect = Command(rawValue: 0xC8)
    /// Tuneup extension: battery level changed; u32 percent.
    public static let appPushBatteryLevel = Command(rawValue: 0xF0)

    public static let knownNames: [UInt8: String] = [
        0x01: "ConfigProductName", 0x02: "ConfigManufacturerName", 0x03: "ConfigModelNumber",
        0x04: "ConfigSerialNumber", 0x05: "ConfigHardwareVersion", 0x06: "ConfigFirmwareVersion",
        0x11: "ConfigBTDisplayName", 0x1A: "ConfigSDHMProductName", 0x1B: "ConfigSDHMManufacturerName",
        0x1C: "ConfigSDHMModelNumber", 0x1D: "ConfigSDHMSerialNumber", 0x1E: "ConfigSDHMBootVersion",
        0x1F: "ConfigSDHMHardwareVersion",
        0x20: "BootImageType", 0x22: "BootAuthStatus", 0x23: "BootAuthChallenge", 0x24: "BootAuthResponse",
        0x25: "BootJumpToBootloader", 0x26: "BootEraseImageSector", 0x27: "BootWriteImage",
        0x28: "BootReadImage", 0x29: "BootCommitImage", 0x2A: "BootJumpToApplication", 0x2C: "BootVerifyCRC",
        0x2D: "BootEraseRsrc1Sector", 0x2E: "BootWriteRsrc1", 0x2F: "BootReadRsrc1",
        0x30: "BootEraseRsrc2Sector", 0x31: "BootWriteRsrc2", 0x32: "BootReadRsrc2", 0x3A: "BootReadVersionFile", 0x3B: "BootCapabilities (Tuneup extension)",
        0x7F: "AppShutdown", 0x80: "App_0x80", 0x81: "AppAudioEQPreset", 0x82: "AppMicEQ", 0x83: "AppSysState",
        0x84: "AppIsHeadsetOn", 0x85: "AppANCEnable", 0x86: "AppANCAwarenessPreset", 0x87: "AppFirmwareVersion",
        0x88: "AppANCLevel", 0x89: "AppAwarenessRawLeft", 0x8A: "AppAwarenessRawRight",
        0x8B: "AppAwarenessRawSteps", 0x8C: "AppSpatialPreset", 0x8E: "AppGraphicEQSetting",
        0x90: "AppGraphicEQLimits", 0x91: "AppGraphicEQDefaultPreset", 0x92: "AppGraphicEQCurrentPreset",
        0x93: "AppGraphicEQFactoryPresetReset", 0x94: "AppGraphicEQPresetBandSettings", 0x95: "AppGraphicEQBand",
        0x96: "AppGraphicEQPersistPreset", 0x97: "AppGraphicEQBandFreq", 0x98: "AppGraphicEQFactoryResetPreset",
        0x99: "App_0x99", 0x9A: "AppGraphicEQPresetName (Tuneup extension)",
        0xA0: "AppSensorStatus", 0xA1: "AppTapThresholdHigh", 0xA2: "AppTapThresholdLow",
        0xA3: "AppTapPulseWindow", 0xA4: "AppTapTimeout", 0xA5: "AppTapDebounce", 0xA6: "AppTapIdleDebounce",
        0xA7: "AppTapCommit", 0xB0: "AppBatteryLevel", 0xB1: "App_0xB1", 0xB2: "App_0xB2 (start auto-calibration)",
        0xB3: "App_0xB3 (calibration status)", 0xB4: "App_0xB4", 0xB5: "AppSmartButtonFeatureIndex",
        0xB6: "AppOnEarDetectionWithAutoOff", 0xB7: "AppVoicePromptEnable",
        0xC0: "AppPushHeartrateSensorData", 0xC5: "AppPushANCEnable", 0xC6: "AppPushANCAwarenessPreset",
        0xC7: "AppPush9AxisRawData", 0xC8: "AppPushTapDetect", 0xF0: "AppPushBatteryLevel (Tuneup extension)",
    ]
}
