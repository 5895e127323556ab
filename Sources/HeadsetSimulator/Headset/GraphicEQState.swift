import LightX
import Simulator

/// One graphic-EQ preset as the simulated device stores it.
///
/// `workingGains` are what the host reads and writes (0x94, 0x95) and what the audio path would use;
/// `persistedGains` are what survives a power cycle (written by 0x96 persist); `factoryGains` are what the factory
/// resets (0x93, 0x98) restore. The name is decided by the device and never changes.
public struct SimulatedEQPreset: Codable, Sendable, Hashable {
    /// The device's name for the preset (reported by the 0x9A extension).
    public var name: String
    /// The gains the factory resets restore.
    public var factoryGains: [Int32]
    /// The gains that survive a power cycle.
    public var persistedGains: [Int32]
    /// The gains in effect now.
    public var workingGains: [Int32]

    /// A preset in its factory state: all three gain sets equal.
    public init(name: String, factoryGains: [Int32]) {
        self.name = name
        self.factoryGains = factoryGains
        self.persistedGains = factoryGains
        self.workingGains = factoryGains
    }
}

/// The graphic equalizer of the simulated device: bands, limits, presets and the current/default selection.
public struct GraphicEQState: Codable, Sendable, Hashable {
    /// Band centre frequencies in Hz; their count is the device's band count.
    public var bandFrequencies: [UInt32]
    /// The smallest gain a band accepts, in dB.
    public var minGain: Int32
    /// The largest gain a band accepts, in dB.
    public var maxGain: Int32
    /// The presets, indexed by preset number.
    public var presets: [SimulatedEQPreset]
    /// The preset in use (0x92).
    public var currentPreset: UInt32
    /// The preset selected at power-on (0x91, write-only on the wire).
    public var defaultPreset: UInt32
    /// The default preset the full factory reset (0x93) restores.
    public var factoryDefaultPreset: UInt32

    /// The factory centre frequencies: 31 Hz ... 16 kHz in octaves.
    public static let factoryFrequencies: [UInt32] = [31, 62, 125, 250, 500, 1000, 2000, 4000, 8000, 16000]

    /// The factory presets: the seed's default names "0 Music, 1 Movie, 2 Voice, 3 User", each with distinct gains.
    public static let factoryPresets: [SimulatedEQPreset] = [
        SimulatedEQPreset(name: "Music", factoryGains: [4, 3, 2, 0, -1, -1, 0, 2, 3, 4]),
        SimulatedEQPreset(name: "Movie", factoryGains: [5, 4, 2, 0, 0, 1, 2, 1, 0, -1]),
        SimulatedEQPreset(name: "Voice", factoryGains: [-4, -3, -2, 0, 2, 4, 5, 4, 1, -2]),
        SimulatedEQPreset(name: "User", factoryGains: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    ]

    /// The factory state: 10 bands, -10...+10 dB, the four factory presets, preset 0 current and default.
    public static let factory = GraphicEQState(
        bandFrequencies: factoryFrequencies, minGain: -10, maxGain: 10, presets: factoryPresets,
        currentPreset: 0, defaultPreset: 0, factoryDefaultPreset: 0)

    /// Creates a graphic-EQ state from its parts (not validated; see `validate()`).
    public init(bandFrequencies: [UInt32], minGain: Int32, maxGain: Int32, presets: [SimulatedEQPreset],
                currentPreset: UInt32, defaultPreset: UInt32, factoryDefaultPreset: UInt32) {
        self.bandFrequencies = bandFrequencies
        self.minGain = minGain
        self.maxGain = maxGain
        self.presets = presets
        self.currentPreset = currentPreset
        self.defaultPreset = defaultPreset
        self.factoryDefaultPreset = factoryDefaultPreset
    }

    /// The number of bands.
    public var bandCount: Int { bandFrequencies.count }
    /// The number of presets.
    public var presetCount: Int { presets.count }

    /// The 0x90 reply: band count, preset count (the sheet's numSettings), min and max gain.
    public var limits: GraphicEQLimits {
        GraphicEQLimits(bandCount: UInt32(bandCount), settingCount: UInt32(presetCount), minGain: minGain, maxGain: maxGain)
    }

    /// Whether `preset` names an existing preset.
    public func hasPreset(_ preset: UInt32) -> Bool { UInt64(preset) < UInt64(presetCount) }
    /// Whether `band` names an existing band.
    public func hasBand(_ band: UInt32) -> Bool { UInt64(band) < UInt64(bandCount) }
    /// Whether `gain` lies within `minGain...maxGain`.
    public func accepts(gain: Int32) -> Bool { gain >= minGain && gain <= maxGain }

    /// Restores every preset's factory gains (working and persisted) and the factory default preset (0x93).
    public mutating func factoryResetAll() {
        for k in presets.indices { factoryReset(preset: k) }
        defaultPreset = factoryDefaultPreset
    }

    /// Restores one preset's factory gains, working and persisted (0x98). `preset` must be valid.
    public mutating func factoryReset(preset k: Int) {
        presets[k].workingGains = presets[k].factoryGains
        presets[k].persistedGains = presets[k].factoryGains
    }

    /// The state after a power cycle: working gains fall back to the persisted ones and the default preset is
    /// selected.
    public func poweredOn() -> GraphicEQState {
        var copy = self
        for k in copy.presets.indices { copy.presets[k].workingGains = copy.presets[k].persistedGains }
        copy.currentPreset = copy.defaultPreset
        return copy
    }

    /// Checks the invariants the firmware relies on; the problem is described in the thrown message.
    public func validate() throws(SimulatorError) {
        func bad(_ why: String) -> SimulatorError { SimulatorError(.corruptState, "graphic EQ: \(why)") }
        guard (1...GraphicEQPresetGains.maxBands).contains(bandCount) else {
            throw bad("\(bandCount) bands (expected 1...\(GraphicEQPresetGains.maxBands))")
        }
        guard minGain <= maxGain else { throw bad("minimum gain \(minGain) is above maximum gain \(maxGain)") }
        guard (1...255).contains(presetCount) else { throw bad("\(presetCount) presets (expected 1...255)") }
        for (k, p) in presets.enumerated() {
            for (what, gains) in [("factory", p.factoryGains), ("persisted", p.persistedGains), ("working", p.workingGains)] {
                guard gains.count == bandCount else {
                    throw bad("preset \(k) has \(gains.count) \(what) gains for \(bandCount) bands")
                }
                if let g = gains.first(where: { !accepts(gain: $0) }) {
                    throw bad("preset \(k) \(what) gain \(g) is outside \(minGain)...\(maxGain)")
                }
            }
        }
        for (what, p) in [("current", currentPreset), ("default", defaultPreset), ("factory default", factoryDefaultPreset)] {
            guard hasPreset(p) else { throw bad("\(what) preset \(p) does not exist (\(presetCount) presets)") }
        }
    }
}
