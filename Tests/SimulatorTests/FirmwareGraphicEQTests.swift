import LightX
import Testing
@testable import HeadsetSimulator

@Suite struct FirmwareGraphicEQTests {
    func gains(_ fw: inout ApplicationFirmware, preset: UInt32) throws -> [Int32] {
        let request = try GraphicEQRequests.readPresetGains(preset: preset)
        let reply = fw.reply(request)
        expectReply(reply, to: request)
        let value = try GraphicEQPresetGains.codec.decode(reply.buffer)
        #expect(value.preset == preset)
        #expect(reply.buffer.count == 48)
        return value.gains
    }

    @Test func limitsReportTenBandsFourPresetsAndPlusMinusTen() throws {
        var fw = ApplicationFirmware()
        let request = AppSettings.graphicEQLimits.readRequest()
        let reply = fw.reply(request)
        expectReply(reply, to: request)
        #expect(try AppSettings.graphicEQLimits.decode(reply.buffer)
            == GraphicEQLimits(bandCount: 10, settingCount: 4, minGain: -10, maxGain: 10))
    }

    @Test func bandFrequencies() throws {
        var fw = ApplicationFirmware()
        let request = try GraphicEQRequests.readBandFrequencies()
        let reply = fw.reply(request)
        expectReply(reply, to: request)
        #expect(try GraphicEQBandFrequencies.codec.decode(reply.buffer) == [31, 62, 125, 250, 500, 1000, 2000, 4000, 8000, 16000])
        // The count argument is required.
        let short = rawRequest(.read, .appGraphicEQBandFreq, [10, 0])
        expectReply(fw.reply(short), to: short, .fail)
    }

    @Test func presetNamesAreTheSeedDefaults() throws {
        var fw = ApplicationFirmware()
        var names: [String] = []
        for p in 0..<4 as Range<UInt32> {
            let request = try GraphicEQRequests.readPresetName(preset: p)
            let reply = fw.reply(request)
            expectReply(reply, to: request)
            names.append(try GraphicEQRequests.presetNameCodec.decode(reply.buffer))
        }
        #expect(names == ["Music", "Movie", "Voice", "User"])
        let missing = try GraphicEQRequests.readPresetName(preset: 4)
        expectReply(fw.reply(missing), to: missing, .exceededLimits)
        let short = rawRequest(.read, .appGraphicEQPresetName, [1])
        expectReply(fw.reply(short), to: short, .fail)
    }

    @Test func factoryPresetsHaveDistinctGains() throws {
        var fw = ApplicationFirmware()
        let all = try (0..<4 as Range<UInt32>).map { try gains(&fw, preset: $0) }
        #expect(Set(all).count == 4)
        #expect(all[0] == [4, 3, 2, 0, -1, -1, 0, 2, 3, 4])
    }

    @Test func currentPresetReadWriteAndLimits() throws {
        var fw = ApplicationFirmware()
        let s = AppSettings.graphicEQCurrentPreset
        #expect(try s.decode(fw.reply(s.readRequest()).buffer) == 0)
        let write = try s.writeRequest(2)
        expectReply(fw.reply(write), to: write)
        #expect(try s.decode(fw.reply(s.readRequest()).buffer) == 2)
        let bad = try s.writeRequest(4)
        expectReply(fw.reply(bad), to: bad, .exceededLimits)
        #expect(fw.state.graphicEQ.currentPreset == 2)
    }

    @Test func defaultPresetIsWriteOnlyAndChecked() throws {
        var fw = ApplicationFirmware()
        let s = AppSettings.graphicEQDefaultPreset
        let write = try s.writeRequest(3)
        expectReply(fw.reply(write), to: write)
        #expect(fw.state.graphicEQ.defaultPreset == 3)
        let bad = try s.writeRequest(9)
        expectReply(fw.reply(bad), to: bad, .exceededLimits)
        #expect(fw.state.graphicEQ.defaultPreset == 3)
    }

    @Test func writeAndReadPresetGains() throws {
        var fw = ApplicationFirmware()
        let new: [Int32] = [-10, -8, -6, -4, -2, 0, 2, 4, 6, 10]
        let write = try GraphicEQRequests.writePresetGains(GraphicEQPresetGains(preset: 3, gains: new))
        expectReply(fw.reply(write), to: write)
        #expect(try gains(&fw, preset: 3) == new)
        #expect(fw.state.graphicEQ.presets[3].persistedGains == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "writes change the working gains only")
    }

    @Test func presetGainsWritesAreChecked() throws {
        var fw = ApplicationFirmware()
        let before = fw.state
        let cases: [(GraphicEQPresetGains, Status)] = [
            (GraphicEQPresetGains(preset: 4, gains: Array(repeating: 0, count: 10)), .exceededLimits),
            (GraphicEQPresetGains(preset: 0, gains: Array(repeating: 0, count: 9)), .exceededLimits),
            (GraphicEQPresetGains(preset: 0, gains: Array(repeating: 0, count: 11)), .exceededLimits),
            (GraphicEQPresetGains(preset: 0, gains: [11, 0, 0, 0, 0, 0, 0, 0, 0, 0]), .exceededLimits),
            (GraphicEQPresetGains(preset: 0, gains: [0, 0, 0, 0, 0, 0, 0, 0, 0, -11]), .exceededLimits),
        ]
        for (value, status) in cases {
            let request = try GraphicEQRequests.writePresetGains(value)
            expectReply(fw.reply(request), to: request, status)
        }
        // Band count 10 but the gains cut short: cannot decode.
        let truncated = rawRequest(.write, .appGraphicEQPresetBandSettings, u32(0) + u32(10) + u32(1))
        expectReply(fw.reply(truncated), to: truncated, .fail)
        // A band count that cannot fit a buffer is still "not the device's count".
        let huge = rawRequest(.write, .appGraphicEQPresetBandSettings, u32(0) + u32(1000))
        expectReply(fw.reply(huge), to: huge, .exceededLimits)
        #expect(fw.state == before)
    }

    @Test func presetGainsReadNeedsItsArgument() throws {
        var fw = ApplicationFirmware()
        let short = rawRequest(.read, .appGraphicEQPresetBandSettings, u32(1))
        expectReply(fw.reply(short), to: short, .fail)
        let missing = try GraphicEQRequests.readPresetGains(preset: 7)
        expectReply(fw.reply(missing), to: missing, .exceededLimits)
        // The default zero buffer reads preset 0.
        let plain = rawRequest(.read, .appGraphicEQPresetBandSettings)
        let reply = fw.reply(plain)
        expectReply(reply, to: plain)
        #expect(try GraphicEQPresetGains.codec.decode(reply.buffer).gains == GraphicEQState.factoryPresets[0].factoryGains)
    }

    @Test func singleBandReadWriteAndLimits() throws {
        var fw = ApplicationFirmware()
        let write = try GraphicEQRequests.writeBand(GraphicEQBandGain(preset: 1, band: 9, gain: -7))
        expectReply(fw.reply(write), to: write)
        let read = try GraphicEQRequests.readBand(preset: 1, band: 9)
        let reply = fw.reply(read)
        expectReply(reply, to: read)
        #expect(try GraphicEQBandGain.codec.decode(reply.buffer) == GraphicEQBandGain(preset: 1, band: 9, gain: -7))
        #expect(try gains(&fw, preset: 1)[9] == -7)

        let before = fw.state
        for bad in [GraphicEQBandGain(preset: 4, band: 0, gain: 0), GraphicEQBandGain(preset: 0, band: 10, gain: 0),
                    GraphicEQBandGain(preset: 0, band: 0, gain: 11), GraphicEQBandGain(preset: 0, band: 0, gain: -11)] {
            let request = try GraphicEQRequests.writeBand(bad)
            expectReply(fw.reply(request), to: request, .exceededLimits)
        }
        for (p, b) in [(UInt32(4), UInt32(0)), (0, 10), (UInt32.max, UInt32.max)] {
            let request = try GraphicEQRequests.readBand(preset: p, band: b)
            expectReply(fw.reply(request), to: request, .exceededLimits)
        }
        let short = rawRequest(.read, .appGraphicEQBand, u32(0))
        expectReply(fw.reply(short), to: short, .fail)
        #expect(fw.state == before)
    }

    @Test func persistStoresTheWorkingGains() throws {
        var fw = ApplicationFirmware()
        let band = try GraphicEQRequests.writeBand(GraphicEQBandGain(preset: 2, band: 0, gain: 9))
        _ = fw.reply(band)
        #expect(fw.state.graphicEQ.presets[2].persistedGains[0] == -4)
        let persist = try AppSettings.graphicEQPersistPreset.writeRequest(2)
        expectReply(fw.reply(persist), to: persist)
        #expect(fw.state.graphicEQ.presets[2].persistedGains[0] == 9)
        let bad = try AppSettings.graphicEQPersistPreset.writeRequest(4)
        expectReply(fw.reply(bad), to: bad, .exceededLimits)
    }

    @Test func factoryResetOfOnePreset() throws {
        var fw = ApplicationFirmware()
        _ = fw.reply(try GraphicEQRequests.writeBand(GraphicEQBandGain(preset: 0, band: 0, gain: -10)))
        _ = fw.reply(try GraphicEQRequests.writeBand(GraphicEQBandGain(preset: 1, band: 0, gain: -10)))
        _ = fw.reply(try AppSettings.graphicEQPersistPreset.writeRequest(0))
        let reset = try AppSettings.graphicEQFactoryResetPreset.writeRequest(0)
        expectReply(fw.reply(reset), to: reset)
        #expect(fw.state.graphicEQ.presets[0] == GraphicEQState.factoryPresets[0])
        #expect(try gains(&fw, preset: 1)[0] == -10, "other presets keep their gains")
        let bad = try AppSettings.graphicEQFactoryResetPreset.writeRequest(4)
        expectReply(fw.reply(bad), to: bad, .exceededLimits)
    }

    @Test func factoryResetOfAllPresets() throws {
        var fw = ApplicationFirmware()
        for p in 0..<4 as Range<UInt32> {
            _ = fw.reply(try GraphicEQRequests.writePresetGains(GraphicEQPresetGains(preset: p, gains: Array(repeating: 1, count: 10))))
            _ = fw.reply(try AppSettings.graphicEQPersistPreset.writeRequest(p))
        }
        _ = fw.reply(try AppSettings.graphicEQDefaultPreset.writeRequest(2))
        let reset = try AppSettings.graphicEQFactoryResetAll.writeRequest(0xDEAD)
        expectReply(fw.reply(reset), to: reset)
        #expect(fw.state.graphicEQ.presets == GraphicEQState.factoryPresets)
        #expect(fw.state.graphicEQ.defaultPreset == 0)
    }
}
