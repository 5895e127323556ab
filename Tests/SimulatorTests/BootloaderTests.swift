import Firmware
import LightX
import Testing
import Transport
@testable import HeadsetSimulator

/// The bootloader's command set, driven on the device machine directly (no links, instant timing).
@Suite struct BootloaderTests {
    let appBase = FlashMap.application.lowerBound

    func bootloader(secureBootKey: VerificationKey? = nil, authenticated: Bool = true) throws -> DeviceMachine {
        var m = DeviceMachine.testDevice(secureBootKey: secureBootKey)
        if authenticated {
            try m.enterBootloaderForTest()
        } else {
            m.enterBootloader(authenticated: false, now: .now)
        }
        #expect(m.state == .bootloader)
        return m
    }

    func erase(_ region: FlashRegion, _ index: UInt32, address: UInt32 = 0) throws -> Packet {
        try Packet.request(.write, region.eraseCommand, argument: u32(index), address: address)
    }

    @Test func aFreshDeviceBootsTheFactoryApplication() throws {
        var m = DeviceMachine.testDevice()
        #expect(m.state == .application)
        #expect(Array(m.reply(BootRequests.imageType()).buffer) == [1])
        #expect(try firmwareVersion(m.reply(AppSettings.firmwareVersion.readRequest())) == FirmwareVersion(1, 4, 2))
        #expect(m.settings == HeadsetState.factory(), "the factory manifest matches the factory settings exactly")
    }

    @Test func theBootloaderIdentifiesItselfAndRefusesAppCommands() throws {
        var m = try bootloader()
        let type = m.reply(BootRequests.imageType())
        expectReply(type, to: BootRequests.imageType())
        #expect(try BootRequests.isBootloader(imageTypeReply: type.buffer))
        let serial = try #require(ConfigStrings.setting(for: .configSerialNumber))
        #expect(try serial.decode(m.reply(serial.readRequest()).buffer) == "TS1-000001")
        let notSupported: [Packet] = [
            AppSettings.batteryLevel.readRequest(), try AppSettings.ancEnabled.writeRequest(true), BootRequests.appShutdown(),
            AppSettings.firmwareVersion.readRequest(), rawRequest(.read, Command(rawValue: 0x21)),
            rawRequest(.read, Command(rawValue: 0x2B)), rawRequest(.write, .bootEraseRsrc2Sector, u32(0)),
            rawRequest(.write, .bootWriteRsrc2, [1]), rawRequest(.read, .bootReadRsrc2, [0]),
            rawRequest(.read, Command(rawValue: 0x3C)), rawRequest(.write, .bootCapabilities, u32(0)),
            rawRequest(.write, .bootImageType, u32(0)), rawRequest(.read, .bootEraseImageSector, u32(0)),
            rawRequest(.write, .bootReadImage, [0]), rawRequest(.read, .bootCommitImage, u32(1)),
            rawRequest(.read, .bootVerifyCRC), rawRequest(.read, .bootJumpToApplication),
            rawRequest(.write, .bootReadVersionFile), rawRequest(.read, Command(rawValue: 0x50)),
            rawRequest(.write, .configProductName, [0x41, 0]),
        ]
        for request in notSupported {
            expectReply(m.reply(request), to: request, .notSupported)
        }
        let elsewhere = rawRequest(.read, .bootImageType, destination: ModuleID(rawValue: 0x41))
        expectReply(m.reply(elsewhere), to: elsewhere, .notFound)
        #expect(m.flash.statistics.operations == 0)
        #expect(m.state == .bootloader)
    }

    @Test func bootWritesBeforeAuthenticationFail() throws {
        var m = try bootloader(authenticated: false)
        let image = TestImages.signed()
        let (sectors, crc) = TestImages.sectorsAndCRC(image)
        let gated: [Packet] = [
            try erase(.application, 0), try erase(.resource, 3, address: 3 * 4096),
            try BootRequests.writeBlock(.application, offset: 0, data: [0]),
            try BootRequests.writeBlock(.resource, offset: 0, data: [0]),
            try BootRequests.commit(sectors: 16), BootRequests.jumpToApplication(),
        ]
        for request in gated {
            expectReply(m.reply(request), to: request, .fail)
        }
        #expect(m.flash.statistics.operations == 0, "nothing was erased or programmed")
        #expect(m.flash.bytes == FactoryFirmware.flashContents)
        // Reads, verification, version files and capabilities need no authentication.
        #expect(m.status(try BootRequests.readBlock(.application, offset: 0, count: 4)) == .ok)
        #expect(m.status(try BootRequests.verifyCRC(.application, sectors: sectors, crc: crc)) == .fail)
        #expect(m.status(try BootRequests.readVersionFile(address: 0)) == .ok)
        #expect(m.status(BootRequests.capabilities()) == .ok)
        #expect(m.state == .bootloader)
    }

    @Test func authenticationInTheBootloader() throws {
        var m = try bootloader(authenticated: false)
        #expect(Array(m.reply(BootRequests.authStatus()).buffer) == [0])
        let challenge = m.reply(BootRequests.authChallenge())
        #expect(challenge.status == .ok && challenge.buffer.count == 16)
        var wrong = try Authentication.response(to: challenge.buffer)
        wrong[0] ^= 1
        #expect(m.status(try BootRequests.authResponse(wrong)) == .fail)
        #expect(m.status(try BootRequests.authResponse(Authentication.response(to: challenge.buffer))) == .fail, "used up")
        try m.authenticate()
        #expect(Array(m.reply(BootRequests.authStatus()).buffer) == [1])
        #expect(m.status(try erase(.application, 0)) == .ok)
        // A new challenge drops the authentication until it is answered.
        _ = m.reply(BootRequests.authChallenge())
        #expect(m.status(try erase(.application, 1)) == .fail)
    }

    @Test func authenticationSurvivesTheJumpIntoTheBootloader() throws {
        var m = DeviceMachine.testDevice()
        try m.authenticate()
        _ = m.reply(BootRequests.appShutdown())
        #expect(m.status(BootRequests.jumpToBootloader()) == .ok)
        #expect(Array(m.reply(BootRequests.authStatus()).buffer) == [1])
        #expect(m.status(BootRequests.jumpToBootloader()) == .ok, "already there: Ok, no reset")
        #expect(m.state == .bootloader)
        // ... but not the jump to the application.
        #expect(m.status(BootRequests.jumpToApplication()) == .ok)
        #expect(m.state == .application)
        #expect(Array(m.reply(BootRequests.authStatus()).buffer) == [0])
    }

    @Test func eraseAddressingAndLimits() throws {
        var m = try bootloader()
        _ = m.flash.program(at: appBase + 2 * 4096 + 10, [0])   // make sector 2 dirty
        #expect(m.status(try erase(.application, 2)) == .ok, "reference addressing: param0 0")
        #expect(m.flash[(appBase + 2 * 4096)..<(appBase + 3 * 4096)].allSatisfy { $0 == 0xFF })
        #expect(m.status(try erase(.application, 3, address: 3 * 4096)) == .ok, "addressed erase: param0 = index × 4096")
        #expect(m.status(try erase(.application, 3, address: 4 * 4096)) == .exceededLimits)
        #expect(m.status(try erase(.application, 3, address: 1)) == .exceededLimits)
        #expect(m.status(try erase(.application, 127, address: 127 * 4096)) == .ok)
        #expect(m.status(try erase(.application, 128)) == .exceededLimits)
        #expect(m.status(try erase(.application, .max)) == .exceededLimits)
        #expect(m.status(try erase(.resource, 319, address: 319 * 4096)) == .ok)
        #expect(m.status(try erase(.resource, 320)) == .exceededLimits)
        #expect(m.status(rawRequest(.write, .bootEraseImageSector, [1, 0])) == .fail, "argument too short")
        #expect(m.flash.statistics.erases == 4)
        // The resource erase hit the resource region.
        #expect(m.flash[(FlashMap.resource.lowerBound + 319 * 4096)..<FlashMap.resource.upperBound].allSatisfy { $0 == 0xFF })
    }

    @Test func writeReadAndTheirLimits() throws {
        var m = try bootloader()
        #expect(m.status(try erase(.application, 0)) == .ok)
        let data = (0..<256).map { UInt8($0) }
        #expect(m.status(try BootRequests.writeBlock(.application, offset: 0, data: data)) == .ok)
        let back = m.reply(try BootRequests.readBlock(.application, offset: 0, count: 256))
        #expect(back.status == .ok && Array(back.buffer) == data)
        let some = m.reply(try BootRequests.readBlock(.application, offset: 10, count: 3))
        #expect(Array(some.buffer) == [10, 11, 12], "the count is the request buffer's length")
        // A write across a page boundary programs two pages.
        let programs = m.flash.statistics.programs
        #expect(m.status(try BootRequests.writeBlock(.application, offset: 400, data: [UInt8](repeating: 7, count: 200))) == .ok)
        #expect(m.flash.statistics.programs == programs + 2)
        #expect(m.flash[(appBase + 400)..<(appBase + 600)].allSatisfy { $0 == 7 })
        // Over programmed bytes with other bits: the read-back differs, Fail.
        #expect(m.status(try BootRequests.writeBlock(.application, offset: 0, data: [0xFF, 0x0F])) == .fail)
        // Rewriting identical bytes over themselves reads back equal.
        #expect(m.status(try BootRequests.writeBlock(.application, offset: 400, data: [7, 7])) == .ok)
        // Limits.
        #expect(m.status(try BootRequests.writeBlock(.application, offset: UInt32(512 * 1024 - 2), data: [1, 2, 3])) == .exceededLimits)
        #expect(m.status(try BootRequests.writeBlock(.application, offset: UInt32(512 * 1024 - 3), data: [0xFF, 0xFF, 0xFF])) == .ok)
        #expect(m.status(rawRequest(.write, .bootWriteImage, [])) == .fail)
        #expect(m.status(try BootRequests.readBlock(.application, offset: UInt32(512 * 1024 - 1), count: 2)) == .exceededLimits)
        #expect(m.status(try BootRequests.readBlock(.resource, offset: UInt32(1280 * 1024 - 256), count: 256)) == .ok)
        #expect(m.status(try BootRequests.readBlock(.resource, offset: UInt32(1280 * 1024 - 255), count: 256)) == .exceededLimits)
        #expect(m.status(rawRequest(.read, .bootReadImage, [])) == .fail)
        // The resource region is its own.
        #expect(m.status(try erase(.resource, 0)) == .ok)
        #expect(m.status(try BootRequests.writeBlock(.resource, offset: 0, data: [0xAB])) == .ok)
        #expect(m.flash[FlashMap.resource.lowerBound] == 0xAB && m.flash[appBase] == 0)
    }

    @Test func verifyCRCChecksTheGivenSectors() throws {
        var m = try bootloader()
        let (sectors, crc) = TestImages.sectorsAndCRC(FactoryFirmware.image.bytes)
        #expect(m.status(try BootRequests.verifyCRC(.application, sectors: sectors, crc: crc)) == .ok)
        #expect(m.bootloader.verified[.application] == Bootloader.Verification(sectors: sectors, crc: crc))
        #expect(m.status(try BootRequests.verifyCRC(.application, sectors: sectors, crc: crc ^ 1)) == .fail)
        #expect(m.bootloader.verified[.application] == nil, "a failed verification is not remembered")
        #expect(m.status(try BootRequests.verifyCRC(.application, sectors: sectors + 1, crc: crc)) == .fail)
        #expect(m.status(try BootRequests.verifyCRC(.application, sectors: 0, crc: crc)) == .exceededLimits)
        #expect(m.status(try BootRequests.verifyCRC(.application, sectors: 129, crc: crc)) == .exceededLimits)
        let erasedResource = CRC32JAMCRC.checksum([UInt8](repeating: 0xFF, count: 320 * 4096))
        #expect(m.status(try BootRequests.verifyCRC(.resource, sectors: 320, crc: erasedResource)) == .ok)
        #expect(m.status(try BootRequests.verifyCRC(.resource, sectors: 321, crc: erasedResource)) == .exceededLimits)
        #expect(m.status(rawRequest(.write, .bootVerifyCRC, u32(1) + u32(2) + u32(0xC6000))) == .exceededLimits, "another resource base")
        #expect(m.status(rawRequest(.write, .bootVerifyCRC, u32(1))) == .fail)
        #expect(m.flash.statistics.bytesRead >= 320 * 4096)
    }

    @Test func commitNeedsAMatchingVerification() throws {
        var m = try bootloader()
        let image = TestImages.signed()
        let (sectors, crc) = TestImages.sectorsAndCRC(image)
        let requests = try TestImages.updateRequests(image, commit: false)
        m.run(requests.dropLast())   // erase and write, no verify
        let commit = try BootRequests.commit(sectors: sectors)
        #expect(m.status(commit) == .fail, "no verification")
        #expect(m.status(try BootRequests.verifyCRC(.application, sectors: sectors, crc: crc)) == .ok)
        #expect(m.status(try BootRequests.commit(sectors: sectors + 1)) == .fail, "other sector count")
        #expect(m.status(try BootRequests.verifyCRC(.resource, sectors: 1, crc: CRC32JAMCRC.checksum([UInt8](repeating: 0xFF, count: 4096)))) == .ok)
        #expect(m.status(try BootRequests.writeBlock(.application, offset: UInt32(image.count), data: [0xFF])) == .ok)
        #expect(m.status(commit) == .fail, "the region changed after the verification")
        #expect(m.status(try BootRequests.verifyCRC(.application, sectors: sectors, crc: crc)) == .ok)
        #expect(m.status(BootRequests.jumpToApplication()) == .fail, "nothing bootable is committed yet")
        #expect(m.status(commit) == .ok)
        #expect(m.status(rawRequest(.write, .bootCommitImage, [1])) == .fail)
        #expect(m.status(try BootRequests.commit(sectors: 0)) == .exceededLimits)
        #expect(m.status(try BootRequests.commit(sectors: 129)) == .exceededLimits)
        #expect(CommitLog.latest(in: m.flash)?.record == CommitRecord(sequence: 2, sectors: sectors, crc: crc,
                                                                         version: ImageVersion(major: 1, minor: 5, revision: 0)))
    }

    @Test func capabilities() throws {
        var m = DeviceMachine.testDevice(queueDepth: 17)
        try m.enterBootloaderForTest()
        let reply = m.reply(BootRequests.capabilities())
        #expect(reply.status == .ok)
        #expect(Array(reply.buffer) == u32(1) + u32(17), "flags bit 0 addressed erase; queue depth")
        #expect(try BootCapabilities(decoding: reply.buffer) == BootCapabilities(addressedErase: true, queueDepth: 17))
    }

    @Test func versionFiles() throws {
        var m = try bootloader()
        func version(_ address: UInt32) throws -> String? {
            let reply = m.reply(try BootRequests.readVersionFile(address: address))
            return reply.status == .ok ? String(decoding: reply.buffer, as: UTF8.self) : nil
        }
        #expect(try version(0) == "1.0.0")
        #expect(try version(0x04_0000) == "1.4.2")
        #expect(try version(0x0C_0000) == nil, "no resource image")
        #expect(m.status(try BootRequests.readVersionFile(address: 0x0C_6000)) == .notFound)
        // A resource image.
        let resource = MCUbootImage.sign(payload: [UInt8](repeating: 0x33, count: 5000),
                                         version: ImageVersion(major: 2, minor: 1, revision: 300, build: 9), model: "TS-1",
                                         region: .resource, key: DevelopmentKeys.testOnlySigningKey).bytes
        m.run(try TestImages.updateRequests(resource, region: .resource))
        #expect(try version(0x0C_0000) == "2.1.300")
        // Erasing part of the application leaves no bootable application: no version.
        #expect(m.status(try erase(.application, 0)) == .ok)
        #expect(try version(0x04_0000) == nil)
        #expect(m.status(BootRequests.jumpToApplication()) == .fail)
        #expect(m.state == .bootloader)
    }

    @Test func aFullUpdateChangesWhatTheApplicationReports() throws {
        var m = try bootloader()
        var settings = m.settings
        settings.ancEnabled = true
        m.settings = settings
        m.run(try TestImages.updateRequests(TestImages.signed()))
        #expect(m.state == .application)
        #expect(try firmwareVersion(m.reply(AppSettings.firmwareVersion.readRequest())) == FirmwareVersion(1, 5, 0))
        let fw = try #require(ConfigStrings.setting(for: .configFirmwareVersion))
        #expect(try fw.decode(m.reply(fw.readRequest()).buffer) == "1.5.0")
        let product = try #require(ConfigStrings.setting(for: .configProductName))
        #expect(try product.decode(m.reply(product.readRequest()).buffer) == "Tuneup Sim Headset Pro")
        let limits = try AppSettings.graphicEQLimits.decode(m.reply(AppSettings.graphicEQLimits.readRequest()).buffer)
        #expect(limits == GraphicEQLimits(bandCount: 8, settingCount: 3, minGain: -12, maxGain: 12))
        let names = try (0..<3).map { try GraphicEQRequests.presetNameCodec.decode(m.reply(GraphicEQRequests.readPresetName(preset: $0)).buffer) }
        #expect(names == ["Bass", "Flat", "Treble"])
        let treble = try GraphicEQPresetGains.codec.decode(m.reply(GraphicEQRequests.readPresetGains(preset: 2, bandCount: 8)).buffer)
        #expect(treble.gains == [0, 0, 0, 0, 2, 5, 7, 9])
        let freqs = try GraphicEQBandFrequencies.codec.decode(m.reply(rawRequest(.read, .appGraphicEQBandFreq, u32(8))).buffer)
        #expect(freqs == [60, 150, 400, 1000, 2400, 6000, 12000, 16000])
        #expect(try AppSettings.awarenessSteps.decode(m.reply(AppSettings.awarenessSteps.readRequest()).buffer) == 5)
        #expect(try AppSettings.awarenessLeft.decode(m.reply(AppSettings.awarenessLeft.readRequest()).buffer) == 3)
        #expect(m.settings.ancEnabled, "settings outside the manifest are kept")
        let file = m.reply(try BootRequests.readVersionFile(address: 0x04_0000))
        #expect(String(decoding: file.buffer, as: UTF8.self) == "1.5.0")
        try m.settings.validate()
    }

    @Test func theUsersEQIsKeptWhenTheLayoutIsTheSame() throws {
        var m = DeviceMachine.testDevice()
        let write = try GraphicEQRequests.writeBand(GraphicEQBandGain(preset: 3, band: 0, gain: 9))
        #expect(m.status(write) == .ok)
        #expect(m.status(try AppSettings.graphicEQPersistPreset.writeRequest(3)) == .ok)
        try m.enterBootloaderForTest()
        m.run(try TestImages.updateRequests(TestImages.signed(TestImages.manifest(version: "1.4.3", .factory))))
        #expect(try firmwareVersion(m.reply(AppSettings.firmwareVersion.readRequest())) == FirmwareVersion(1, 4, 3))
        #expect(m.settings.graphicEQ.presets[3].workingGains[0] == 9, "same EQ layout: the user's gains stay")
        // A new layout resets the EQ to the manifest's presets.
        try m.enterBootloaderForTest()
        m.run(try TestImages.updateRequests(TestImages.signed()))
        #expect(m.settings.graphicEQ.presets.map(\.workingGains) == TestImages.newManifest.presets.map(\.gains))
    }

    @Test func aRawImageWithAManifestIsCommittedWithoutSecureBoot() throws {
        var m = try bootloader()
        let raw = AppManifest.buildPayload(TestImages.manifest(version: "2.0.1"), size: 5000, seed: 1)
        m.run(try TestImages.updateRequests(raw))
        #expect(try firmwareVersion(m.reply(AppSettings.firmwareVersion.readRequest())) == FirmwareVersion(2, 0, 1))
        // An image without a manifest boots too; its version is 0.0.0 (nothing says otherwise).
        try m.enterBootloaderForTest()
        m.run(try TestImages.updateRequests([UInt8](repeating: 0x11, count: 3000)))
        #expect(try firmwareVersion(m.reply(AppSettings.firmwareVersion.readRequest())) == FirmwareVersion(0, 0, 0))
        #expect(m.settings.graphicEQ.bandCount == 8, "no manifest: the EQ stays as it was")
    }

    @Test func secureBootRefusesUnsignedBadlySignedAndForeignImages() throws {
        let other = SigningKey.generate()
        var corrupted = TestImages.signed()
        corrupted[corrupted.count - 1] ^= 0x01   // the last byte of the Ed25519 signature
        var tampered = TestImages.signed()
        tampered[0x200 + 100] ^= 0x01           // payload: the hash no longer matches
        let refused: [(String, [UInt8])] = [
            ("unsigned", TestImages.signed(key: nil)), ("bad signature", corrupted), ("other key", TestImages.signed(key: other)),
            ("tampered payload", tampered), ("raw", AppManifest.buildPayload(TestImages.newManifest, size: 5000, seed: 1)),
        ]
        for (what, image) in refused {
            var m = try bootloader(secureBootKey: DevelopmentKeys.publicKey)
            let requests = try TestImages.updateRequests(image)
            m.run(requests.dropLast(2))   // erase, write, verify: all fine
            #expect(m.status(requests[requests.count - 2]) == .fail, "\(what): commit refused")
            #expect(m.status(requests[requests.count - 1]) == .fail, "\(what): nothing to jump to")
            #expect(m.state == .bootloader)
            m.powerOff()
            m.powerOn(now: .now, delayed: false)
            #expect(m.state == .bootloader, "\(what): the device stays in the bootloader")
        }
        var ok = try bootloader(secureBootKey: DevelopmentKeys.publicKey)
        ok.run(try TestImages.updateRequests(TestImages.signed()))
        #expect(ok.state == .application)
    }

    @Test func secureBootChecksTheImageAtPowerOnToo() throws {
        // The factory image is signed with the development key.
        #expect(DeviceMachine.testDevice(secureBootKey: DevelopmentKeys.publicKey).state == .application)
        #expect(DeviceMachine.testDevice(secureBootKey: SigningKey.generate().publicKey).state == .bootloader)
        // An unsigned application committed without secure boot does not boot once secure boot is on.
        var m = try bootloader()
        m.run(try TestImages.updateRequests(TestImages.signed(key: nil)))
        let strict = DeviceMachine.testDevice(flash: m.flash.bytes, secureBootKey: DevelopmentKeys.publicKey)
        #expect(strict.state == .bootloader)
        #expect(DeviceMachine.testDevice(flash: m.flash.bytes).state == .application)
    }

    @Test func secureBootRefusesRollback() throws {
        var m = try bootloader(secureBootKey: DevelopmentKeys.publicKey)
        let older = try TestImages.updateRequests(TestImages.signed(TestImages.manifest(version: "1.3.9")))
        m.run(older.dropLast(2))
        #expect(m.status(older[older.count - 2]) == .fail, "1.3.9 after 1.4.2")
        let same = try TestImages.updateRequests(TestImages.signed(TestImages.manifest(version: "1.4.2")))
        m.run(same)
        #expect(m.state == .application, "the same version may be re-flashed")
        // Without secure boot a downgrade is the host's decision.
        var open = try bootloader()
        open.run(try TestImages.updateRequests(TestImages.signed(TestImages.manifest(version: "1.0.0"))))
        #expect(open.state == .application)
    }

    @Test func readinessDelayAnswersNotReadyToEverything() throws {
        let t0 = ContinuousClock.now
        var m = DeviceMachine.testDevice(timing: DeviceTiming(readyDelay: .seconds(1)), now: t0)
        #expect(m.state == .application, "power-on at start: no delay")
        try m.authenticate(at: t0)
        #expect(m.status(BootRequests.jumpToBootloader(), at: t0) == .ok)
        for request in [BootRequests.imageType(), BootRequests.authStatus(), AppSettings.batteryLevel.readRequest(),
                        rawRequest(.read, .bootImageType, destination: ModuleID(rawValue: 0x41)),
                        try BootRequests.eraseSector(.application, index: 0)] {
            let reply = m.reply(request, at: t0 + .milliseconds(999))
            expectReply(reply, to: request, .notReady)
        }
        #expect(m.flash.statistics.operations == 0)
        let ready = m.reply(BootRequests.imageType(), at: t0 + .seconds(1))
        #expect(ready.status == .ok && Array(ready.buffer) == [0])
        #expect(Array(m.reply(BootRequests.authStatus(), at: t0 + .seconds(1)).buffer) == [1])
        // Jumping to the application: NotReady again for the delay.
        let t1 = t0 + .seconds(2)
        #expect(m.status(BootRequests.jumpToApplication(), at: t1) == .ok)
        #expect(m.status(BootRequests.imageType(), at: t1 + .milliseconds(500)) == .notReady)
        #expect(Array(m.reply(BootRequests.imageType(), at: t1 + .seconds(1)).buffer) == [1])
    }

    @Test func powerOnWithATornCommitRecordStaysInTheBootloader() throws {
        var m = try bootloader()
        let requests = try TestImages.updateRequests(TestImages.signed())
        m.run(requests.dropLast(2))
        // The commit's program is the next flash operation: cut the power during it.
        m.flash.faults = FlashFaults(powerCutAt: [m.flash.statistics.operations + 1], seed: 5)
        let step = m.handle(requests[requests.count - 2], now: .now)
        #expect(step.powerCut && step.replies.isEmpty && m.state == .off)
        #expect(CommitLog.latest(in: m.flash)?.record.sequence == 1, "the torn record does not count")
        m.powerOn(now: .now, delayed: false)
        #expect(m.state == .bootloader, "the old record's CRC no longer matches the application region")
        // And the device can still be updated.
        try m.authenticate()
        m.run(try TestImages.updateRequests(TestImages.signed()))
        #expect(m.state == .application)
        #expect(CommitLog.latest(in: m.flash)?.record.sequence == 2)
    }

    @Test func powerOnWithATornApplicationSectorStaysInTheBootloader() throws {
        var m = try bootloader()
        m.flash.faults = FlashFaults(powerCutAt: [m.flash.statistics.operations + 1], seed: 1)
        let step = m.handle(try erase(.application, 3), now: .now)
        #expect(step.powerCut && m.state == .off)
        #expect(step.touched == [(appBase + 3 * 4096)..<(appBase + 4 * 4096)])
        m.powerOn(now: .now, delayed: false)
        #expect(m.state == .bootloader)
        #expect(m.status(BootRequests.imageType()) == .ok)
        #expect(m.status(try BootRequests.readVersionFile(address: 0x04_0000)) == .notFound)
    }

    @Test func anInjectedFailureAnswersFail() throws {
        var m = try bootloader()
        m.flash.faults = FlashFaults(failAt: [m.flash.statistics.operations + 1, m.flash.statistics.operations + 3])
        #expect(m.status(try erase(.application, 0)) == .fail)
        #expect(m.status(try erase(.application, 0)) == .ok)
        #expect(m.status(try BootRequests.writeBlock(.application, offset: 0, data: [1])) == .fail)
        #expect(m.flash[appBase] == 0xFF)
        #expect(m.state == .bootloader)
    }
}

/// The update-ownership rule (docs/protocol.md §6.2): one host's update at a time.
@Suite struct UpdateOwnershipTests {
    let busy = BootRefusalReason.busy.encoded

    @Test func anotherLinkIsToldTheDeviceIsBusy() throws {
        let t0 = ContinuousClock.now
        var m = DeviceMachine.testDevice(now: t0)
        try m.enterBootloaderForTest(at: t0)  // link 0 owns the update
        let erase = try BootRequests.eraseSector(.application, index: 3, addressed: true)
        for request in [BootRequests.authChallenge(), erase, try BootRequests.verifyCRC(.application, sectors: 1, crc: 0),
                        try BootRequests.commit(sectors: 1), BootRequests.jumpToApplication()] {
            let reply = m.handle(request, now: t0 + .seconds(1), from: 7).replies[0]
            #expect(reply.status == .fail && Array(reply.buffer) == busy, "\(request.command)")
            #expect(BootRefusalReason(reply: reply) == .busy)
        }
        #expect(m.flash.statistics.erases == 0, "nothing executed")
        // Reads are served to everyone; the owner goes on.
        #expect(m.handle(BootRequests.imageType(), now: t0 + .seconds(1), from: 7).replies[0].status == .ok)
        #expect(m.handle(BootRequests.capabilities(), now: t0 + .seconds(1), from: 7).replies[0].status == .ok)
        #expect(m.handle(erase, now: t0 + .seconds(2), from: 0).replies[0].status == .ok)
        // Quiet for the whole period: another link may take over.
        let later = t0 + .seconds(2) + UpdateOwner.quietPeriod
        #expect(m.handle(BootRequests.authChallenge(), now: later, from: 7).replies[0].status == .ok)
        #expect(m.handle(erase, now: later, from: 0).replies[0].buffer.elementsEqual(busy), "the first owner lost it")
    }

    @Test func closingTheOwnersLinkFreesTheDevice() throws {
        let t0 = ContinuousClock.now
        var m = DeviceMachine.testDevice(now: t0)
        try m.enterBootloaderForTest(at: t0)
        #expect(m.handle(BootRequests.authChallenge(), now: t0, from: 7).replies[0].status == .fail)
        m.linkClosed(0)
        // A request still queued from the closed link runs but does not claim the update.
        let erase = try BootRequests.eraseSector(.application, index: 3, addressed: true)
        #expect(m.handle(erase, now: t0, from: nil).replies[0].status == .ok)
        #expect(m.updateOwner == nil)
        // The same host reconnecting (a new link) takes it.
        #expect(m.handle(erase, now: t0, from: 8).replies[0].status == .ok)
        #expect(m.updateOwner?.link == 8)
    }
}
