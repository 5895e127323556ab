import Testing
@testable import Headset

/// What `tuneup probe` prints, made by the library (issue 31 §1).
struct ProbeReportTests {
    static func snapshot(mode: FirmwareMode? = FirmwareMode(running: .application)) -> HeadsetSnapshot {
        let graphic = GraphicEQInfo(bandCount: 2, minGain: -10, maxGain: 10, frequencies: [31, 1000],
                                    presets: [GraphicEQPresetInfo(index: 0, name: "Music")], currentPreset: 0)
        return HeadsetSnapshot(
            mode: mode, identity: DeviceIdentity(product: "TS1", manufacturer: "Tuneup", serial: "TS1-1"), firmwareVersion: "1.5.0",
            batteryPercent: 80, anc: .init(enabled: true, level: 0.5), ambient: .init(preset: "aware", presetValue: 1, left: 2, right: 3, steps: 5),
            eq: .init(audioPreset: "music", graphic: graphic, gains: [-2, 3]),
            settings: .init(smartButtonANC: true, autoOff: false, voicePrompt: nil))
    }

    @Test func everyRowWithTheBandsAfterTheGraphicEQ() {
        #expect(ProbeReport(device: "sim", snapshot: Self.snapshot()).text == """
            Device        sim
            Mode          application
            Product       TS1
            Manufacturer  Tuneup
            Model         not supported
            Serial        TS1-1
            Hardware      not supported
            Firmware      1.5.0
            BT name       not supported
            Battery       80%
            ANC           on (level 0.50)
            Ambient       preset aware, left 2/4, right 3/4
            Audio EQ      music
            Graphic EQ    preset 0 "Music", 2 bands, -10...+10 dB
              31 Hz    -2 dB
              1 kHz    +3 dB
            Smart button  ANC
            Auto-off      off
            Voice prompt  not supported
            """)
    }

    @Test func aHeadsetInItsBootloaderSaysHowToGetAnApplication() {
        let text = ProbeReport(device: "sim", snapshot: Self.snapshot(mode: FirmwareMode(running: .bootloader, committedApplication: "1.4.2"))).text
        #expect(text.contains("Mode          bootloader (committed application 1.4.2): 'tuneup flash IMAGE' installs one, 'tuneup bootloader leave' starts it"))
        #expect(text.contains("Firmware      bootloader running"))
    }
}
