import Testing
@testable import LightX

@Suite struct ArgumentTests {
    @Test func graphicEQLayoutsMatchTheSheet() throws {
        let read = try GraphicEQRequests.readPresetGains(preset: 2)
        #expect(read.buffer.count == 48)
        #expect(Array(read.buffer.prefix(8)) == [2, 0, 0, 0, 10, 0, 0, 0])
        #expect(read.buffer.dropFirst(8).allSatisfy { $0 == 0 })
        #expect(read.opcode == .read && read.command == .appGraphicEQPresetBandSettings)

        let gains: [Int32] = [-10, -5, 0, 1, 2, 3, 4, 5, 9, 10]
        let write = try GraphicEQRequests.writePresetGains(GraphicEQPresetGains(preset: 3, gains: gains))
        #expect(write.buffer.count == 48)
        #expect(Array(write.buffer[8..<12]) == [0xF6, 0xFF, 0xFF, 0xFF])
        #expect(try GraphicEQPresetGains.codec.decode(write.buffer) == GraphicEQPresetGains(preset: 3, gains: gains))

        let band = try GraphicEQRequests.writeBand(GraphicEQBandGain(preset: 1, band: 9, gain: -3))
        #expect(band.buffer == [1, 0, 0, 0, 9, 0, 0, 0, 0xFD, 0xFF, 0xFF, 0xFF])
        #expect(try GraphicEQRequests.readBand(preset: 1, band: 4).buffer == [1, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0])

        let freq = try GraphicEQRequests.readBandFrequencies()
        #expect(freq.buffer.count == 44 && Array(freq.buffer.prefix(4)) == [10, 0, 0, 0])
        let freqs: [UInt32] = [31, 62, 125, 250, 500, 1000, 2000, 4000, 8000, 16000]
        #expect(try GraphicEQBandFrequencies.codec.decode(GraphicEQBandFrequencies.codec.encode(freqs)) == freqs)

        let limits = GraphicEQLimits(bandCount: 10, settingCount: 4, minGain: -10, maxGain: 10)
        #expect(GraphicEQLimits.codec.encode(limits) == [10, 0, 0, 0, 4, 0, 0, 0, 0xF6, 0xFF, 0xFF, 0xFF, 10, 0, 0, 0])
        #expect(try GraphicEQLimits.codec.decode(GraphicEQLimits.codec.encode(limits)) == limits)
    }

    @Test func shortRepliesThrowTruncated() {
        #expect(throws: LightXError(.truncated, "")) { try AppSettings.batteryLevel.decode([1, 2]) }
        #expect(throws: LightXError(.truncated, "")) { try GraphicEQLimits.codec.decode([10, 0, 0, 0]) }
        #expect(throws: LightXError(.truncated, "")) { try GraphicEQPresetGains.codec.decode([0, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0]) }
        #expect(throws: LightXError(.malformed, "")) { try GraphicEQPresetGains.codec.decode([0, 0, 0, 0, 0xFF, 0xFF, 0, 0]) }
        #expect(throws: LightXError(.truncated, "")) { try FirmwareVersion.codec.decode([1]) }
    }

    @Test func scalarSettings() throws {
        #expect(try AppSettings.ancEnabled.decode([7, 0, 0, 0]) == true, "any non-zero value means on")
        #expect(try AppSettings.ancEnabled.decode([0, 0, 0, 0]) == false)
        #expect(try AppSettings.ancLevel.writeRequest(0.5).buffer == [0, 0, 0, 0x3F])
        #expect(try AppSettings.awarenessPreset.writeRequest(.high).buffer == [3, 0, 0, 0])
        #expect(try AppSettings.awarenessPreset.decode([9, 0, 0, 0]) == AwarenessPreset(rawValue: 9), "unknown presets are kept")
        #expect(try AppSettings.awarenessSteps.decode([8, 0, 0, 0]) == 8)
        #expect(try AppSettings.audioEQPreset.decode([2, 0, 0, 0]) == .movie)
        #expect(try AppSettings.firmwareVersion.decode([1, 4, 2, 0]) == FirmwareVersion(1, 4, 2))
        #expect(FirmwareVersion("2.10.0")! > FirmwareVersion("2.9.9")!)
        #expect(FirmwareVersion("1.2") == nil && FirmwareVersion("1.2.256") == nil)
    }

    @Test func configStrings() throws {
        let codec = ValueCodec<String>.cString("x", capacity: 16)
        #expect(codec.encode("Serial") == Array("Serial".utf8) + [0])
        #expect(codec.encode(String(repeating: "A", count: 40)).count == 16)
        #expect(codec.encode("ééééééééé").count <= 16)
        #expect(try codec.decode(codec.encode("ééééééééé")) == "ééééééé", "trimmed on a character boundary")
        #expect(try codec.decode(Array("abc".utf8) + [0, 0x41]) == "abc")
        #expect(try codec.decode(Array("no terminator".utf8)) == "no terminator")
        #expect(ConfigStrings.setting(for: .configSerialNumber)?.name == "serial")
    }

    @Test func bootRequests() throws {
        let erase = try BootRequests.eraseSector(.resource, index: 5)
        #expect(erase.command == .bootEraseRsrc1Sector && erase.buffer == [5, 0, 0, 0] && erase.address == 0)
        let write = try BootRequests.writeBlock(.application, offset: 0x7FF00, data: [UInt8](repeating: 0xAB, count: 256))
        #expect(SPPFraming.encode(write).count == 275 && write.address == 0x7FF00)
        let verifyApp = try BootRequests.verifyCRC(.application, sectors: 128, crc: 0xDEADBEEF)
        #expect(verifyApp.buffer == [128, 0, 0, 0, 0xEF, 0xBE, 0xAD, 0xDE])
        let verifyRes = try BootRequests.verifyCRC(.resource, sectors: 2, crc: 1)
        #expect(verifyRes.buffer.count == 12 && Array(verifyRes.buffer.suffix(4)) == [0, 0, 0x0C, 0])
        #expect(try VerifyCRCArgument(decoding: verifyRes.buffer) == VerifyCRCArgument(region: .resource, sectors: 2, crc: 1))
        #expect(try BootRequests.commit(sectors: 3).buffer == [3, 0, 0, 0])
        #expect(try BootRequests.readVersionFile(address: FlashRegion.resource.versionFileAddress).address == 0x0C0000)
        #expect(throws: LightXError(.valueOutOfRange, "")) { try BootRequests.readBlock(.application, offset: 0, count: 0) }
        #expect(try BootRequests.isBootloader(imageTypeReply: [0]))
        #expect(try !BootRequests.isBootloader(imageTypeReply: [1]))
        #expect(FlashRegion.sectorCount(forLength: 4097) == 2)
    }
}
