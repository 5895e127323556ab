import Speaker

/// What a simulated speaker is: fixed for its life (not settings).
public struct SpeakerIdentity: Sendable, Hashable {
    public var deviceId: UInt64
    public var macAddress: MACAddress
    public var modelName: String
    public var firmwareVersion: String
    /// dBm, -100...0.
    public var wifiSignalStrength: Int8
    /// The name before anybody renames it.
    public var defaultName: String

    public init(deviceId: UInt64, macAddress: MACAddress, modelName: String = "Omni 20", firmwareVersion: String = "0.1.6.2",
                wifiSignalStrength: Int8 = -47, defaultName: String = "Speaker") {
        self.deviceId = deviceId
        self.macAddress = macAddress
        self.modelName = modelName
        self.firmwareVersion = firmwareVersion
        self.wifiSignalStrength = max(-100, min(0, wifiSignalStrength))
        self.defaultName = defaultName
    }

    /// Speaker `index` of a simulation with `seed`: a 48-bit id and a locally administered MAC from both, a model,
    /// firmware 0.1.6.2, a Wi-Fi strength between -40 and -69 dBm, the name "Speaker N" (N = index + 1).
    public static func simulated(index: Int, seed: UInt64 = 1) -> SpeakerIdentity {
        var x = seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        x ^= x >> 31
        let id = (x & 0xFFFF_FFFF_FFFF) | 1
        var mac = (0..<6).map { UInt8(truncatingIfNeeded: id >> (8 * (5 - $0))) }
        mac[0] = (mac[0] | 0x02) & 0xFE
        let models = ["Omni 10", "Omni 20", "Omni Adapt", "Omni 50"]
        return SpeakerIdentity(
            deviceId: id, macAddress: try! MACAddress(mac), modelName: models[index % models.count],
            wifiSignalStrength: Int8(-40 - (index * 7) % 30), defaultName: "Speaker \(index + 1)")
    }
}

/// A speaker's settings, kept in the state file across restarts.
public struct SpeakerSettings: Sendable, Hashable, Codable {
    public var name: String
    public var volume: Int
    public var muted: Bool
    public var groupId: UInt64
    public var groupName: String
    public var balance: Int
    public var role: Int
    public var channelType: Int

    public init(name: String, volume: Int = 25, muted: Bool = false, groupId: UInt64 = 0, groupName: String = "harman",
                balance: Int = 0, role: Int = 0, channelType: Int = 1) {
        self.name = name
        self.volume = volume
        self.muted = muted
        self.groupId = groupId
        self.groupName = groupName
        self.balance = balance
        self.role = role
        self.channelType = channelType
    }

    /// Whether every value is one the protocol allows (a hand-edited state file may hold others).
    var isValid: Bool {
        (0...50).contains(volume) && (-6...6).contains(balance) && (0...255).contains(role) && (0...255).contains(channelType)
            && !name.isEmpty && name.utf8.count <= 255 && !groupName.isEmpty && groupName.utf8.count <= 255
            && (groupId == 0) == (groupName == "harman")
    }
}
