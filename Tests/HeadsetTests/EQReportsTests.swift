import Headset
import Testing

/// What `tuneup eq` prints, made by the library.
struct EQReportsTests {
    static let info = GraphicEQInfo(
        bandCount: 3, minGain: -10, maxGain: 10, frequencies: [31, 1000, 16000],
        presets: [GraphicEQPresetInfo(index: 0, name: "Music"), GraphicEQPresetInfo(index: 1, name: "User")], currentPreset: 1)

    @Test func presetsByNameOrNumberAndAnUnknownOneNamesTheDevicesPresets() throws {
        #expect(try Self.info.preset(nil) == 1)
        #expect(try Self.info.preset("music") == 0)
        #expect(try Self.info.preset("1") == 1)
        let error = #expect(throws: HeadsetError.self) { try Self.info.preset("movie") }
        #expect(error?.message == "unknown preset 'movie'; this device has: 0 music, 1 user" && error?.category == .usage)
    }

    @Test func theTextOfTheInfoAndOfAPresetsGains() {
        #expect(Self.info.text == """
            Bands        3
            Gain range   -10...+10 dB
            Frequencies  31 Hz, 1 kHz, 16 kHz
            Presets      0 Music
                         1 User (current)
            """)
        let gains = GraphicEQPresetReport(preset: 1, name: "User", current: true, frequencies: [31, 1000], gains: [-2, 10])
        #expect(gains.text == "Preset 1 \"User\" (current)\n  31 Hz    -2 dB\n  1 kHz   +10 dB")
    }
}
