import LightX
import Testing
@testable import HeadsetSimulator

@Suite struct FirmwareAppTests {
    @Test func readsAnswerTheFactoryValues() throws {
        var fw = ApplicationFirmware()
        func read<V>(_ s: Setting<V>) throws -> V {
            let request = s.readRequest()
            let reply = fw.reply(request)
            expectReply(reply, to: request)
            return try s.decode(reply.buffer)
        }
        #expect(try read(AppSettings.ancEnabled) == false)
        #expect(try read(AppSettings.ancLevel) == 0.5)
        #expect(try read(AppSettings.awarenessPreset) == .none)
        #expect(try read(AppSettings.awarenessLeft) == 3)
        #expect(try read(AppSettings.awarenessRight) == 3)
        #expect(try read(AppSettings.awarenessSteps) == 8)
        #expect(try read(AppSettings.audioEQPreset) == .music)
        #expect(try read(AppSettings.firmwareVersion) == FirmwareVersion(1, 4, 2))
        #expect(try read(AppSettings.batteryLevel) == 100)
        #expect(try read(AppSettings.smartButton) == true)
        #expect(try read(AppSettings.autoOff) == true)
        #expect(try read(AppSettings.voicePrompt) == true)
        #expect(try read(ApplicationFirmware.headsetOn) == true)
        #expect(try read(ApplicationFirmware.systemState) == 0)
    }

    @Test func firmwareVersionReplyIsFourBytes() {
        var fw = ApplicationFirmware()
        let reply = fw.reply(AppSettings.firmwareVersion.readRequest())
        #expect(Array(reply.buffer) == [1, 4, 2, 0])
    }

    @Test func hostWritesChangeTheStateAndAreAcknowledgedEmpty() throws {
        var fw = ApplicationFirmware()
        func write<V>(_ s: Setting<V>, _ v: V) throws {
            let request = try s.writeRequest(v)
            let out = fw.handle(request)
            #expect(out.count == 1, "a host write must not cause a push")
            expectReply(out[0], to: request)
        }
        try write(AppSettings.ancEnabled, true)
        try write(AppSettings.ancLevel, 0.25)
        try write(AppSettings.awarenessPreset, .high)
        try write(AppSettings.awarenessLeft, 7)
        try write(AppSettings.awarenessRight, 0)
        try write(AppSettings.audioEQPreset, .conference)
        try write(AppSettings.smartButton, false)
        try write(AppSettings.autoOff, false)
        try write(AppSettings.voicePrompt, false)
        let s = fw.state
        #expect(s.ancEnabled && s.ancLevel == 0.25 && s.awarenessPreset == 3)
        #expect(s.ambientLeft == 7 && s.ambientRight == 0 && s.audioEQPreset == 3)
        #expect(!s.smartButton && !s.autoOff && !s.voicePrompt)
        // And reads return the new values.
        #expect(try AppSettings.ancLevel.decode(fw.reply(AppSettings.ancLevel.readRequest()).buffer) == 0.25)
        #expect(try AppSettings.awarenessLeft.decode(fw.reply(AppSettings.awarenessLeft.readRequest()).buffer) == 7)
    }

    @Test func anyNonZeroBooleanMeansTrue() {
        var fw = ApplicationFirmware()
        let request = rawRequest(.write, .appANCEnable, u32(7))
        expectReply(fw.reply(request), to: request)
        #expect(fw.state.ancEnabled)
    }

    @Test(arguments: [
        (Command.appANCLevel, [UInt8]([0, 0, 0x80, 0x3F + 1])),   // 1.0 with the exponent bumped: 4.0
        (Command.appANCLevel, AppSettings.ancLevel.encode(-0.01)),
        (Command.appANCLevel, AppSettings.ancLevel.encode(.nan)),
        (Command.appANCLevel, AppSettings.ancLevel.encode(.infinity)),
        (Command.appAwarenessRawLeft, u32(8)),
        (Command.appAwarenessRawRight, u32(UInt32.max)),
        (Command.appANCAwarenessPreset, u32(4)),
        (Command.appAudioEQPreset, u32(4)),
    ])
    func outOfRangeWritesExceedLimitsAndChangeNothing(command: Command, argument: [UInt8]) {
        var fw = ApplicationFirmware()
        let before = fw.state
        let request = rawRequest(.write, command, argument)
        expectReply(fw.reply(request), to: request, .exceededLimits)
        #expect(fw.state == before)
    }

    @Test func ambientStepBoundaryIsTheStepCountMinusOne() throws {
        var fw = ApplicationFirmware()
        expectReply(fw.reply(try AppSettings.awarenessLeft.writeRequest(7)), to: try AppSettings.awarenessLeft.writeRequest(7))
        let request = try AppSettings.awarenessLeft.writeRequest(8)
        expectReply(fw.reply(request), to: request, .exceededLimits)
        #expect(fw.state.ambientLeft == 7)
    }

    @Test(arguments: [Command.appANCEnable, .appANCLevel, .appANCAwarenessPreset, .appAwarenessRawLeft,
                      .appAwarenessRawRight, .appAudioEQPreset, .appSmartButtonFeatureIndex,
                      .appOnEarDetectionWithAutoOff, .appVoicePromptEnable, .appGraphicEQCurrentPreset,
                      .appGraphicEQDefaultPreset, .appGraphicEQPersistPreset, .appGraphicEQFactoryResetPreset,
                      .appGraphicEQFactoryPresetReset, .appGraphicEQBand, .appGraphicEQPresetBandSettings])
    func truncatedWriteArgumentsFail(command: Command) {
        var fw = ApplicationFirmware()
        let before = fw.state
        for argument in [[UInt8](), [1], [1, 0, 0]] {
            let request = rawRequest(.write, command, argument)
            expectReply(fw.reply(request), to: request, .fail)
        }
        #expect(fw.state == before)
    }

    @Test(arguments: [Command.appFirmwareVersion, .appAwarenessRawSteps, .appBatteryLevel, .appGraphicEQLimits,
                      .appIsHeadsetOn, .appSysState, .appGraphicEQBandFreq, .appGraphicEQPresetName])
    func writesOfReadOnlyCommandsAreNotSupported(command: Command) {
        var fw = ApplicationFirmware()
        let before = fw.state
        let request = rawRequest(.write, command, u32(1))
        expectReply(fw.reply(request), to: request, .notSupported)
        #expect(fw.state == before)
    }

    @Test(arguments: [Command.appGraphicEQDefaultPreset, .appGraphicEQPersistPreset, .appGraphicEQFactoryResetPreset,
                      .appGraphicEQFactoryPresetReset, .appShutdown])
    func readsOfWriteOnlyCommandsAreNotSupported(command: Command) {
        var fw = ApplicationFirmware()
        let request = rawRequest(.read, command)
        expectReply(fw.reply(request), to: request, .notSupported)
        #expect(!fw.shutdownRequested)
    }

    @Test(arguments: [0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xB2, 0xB3] as [UInt8])
    func sensorTapAndCalibrationCommandsAreNotSupported(raw: UInt8) {
        var fw = ApplicationFirmware()
        for opcode in [Opcode.read, .write] {
            let request = rawRequest(opcode, Command(rawValue: raw), u32(1))
            expectReply(fw.reply(request), to: request, .notSupported)
        }
    }

    @Test(arguments: [0x00, 0x07, 0x21, 0x40, 0x7E, 0x80, 0x82, 0x8C, 0x8E, 0x99, 0x9B, 0xB1, 0xB8, 0xBF, 0xC5, 0xF0, 0xFF] as [UInt8])
    func undefinedCommandsAreNotSupported(raw: UInt8) {
        var fw = ApplicationFirmware()
        let before = fw.state
        for opcode in [Opcode.read, .write] {
            let request = rawRequest(opcode, Command(rawValue: raw), u32(1))
            expectReply(fw.reply(request), to: request, .notSupported)
        }
        #expect(fw.state == before)
    }

    @Test func otherDestinationsAreNotFound() {
        var fw = ApplicationFirmware()
        for destination in [ModuleID.av35xxApplication, .dsp, .bluetooth, .none] {
            let request = rawRequest(.write, .appANCEnable, u32(1), destination: destination)
            expectReply(fw.reply(request), to: request, .notFound)
        }
        #expect(!fw.state.ancEnabled)
    }

    @Test(arguments: [Opcode.none, .set, .get, .request, Opcode(rawValue: 0x3F)])
    func otherOpcodesAreNotSupported(opcode: Opcode) {
        var fw = ApplicationFirmware()
        let request = rawRequest(opcode, .appANCEnable, u32(1))
        expectReply(fw.reply(request), to: request, .notSupported)
        #expect(!fw.state.ancEnabled)
    }

    @Test func appShutdownIsAcknowledgedAndRemembered() {
        var fw = ApplicationFirmware()
        let request = BootRequests.appShutdown()
        #expect(!fw.shutdownRequested)
        expectReply(fw.reply(request), to: request)
        #expect(fw.shutdownRequested)
    }

    @Test func usbStyleRequestsAreAnsweredToo() throws {
        var fw = ApplicationFirmware()
        let request = AppSettings.batteryLevel.readRequest(.usb)
        let reply = fw.reply(request)
        expectReply(reply, to: request)
        #expect(reply.header.destination == .usb)
        #expect(try AppSettings.batteryLevel.decode(reply.buffer) == 100)
    }

    @Test func readsIgnoreTheirBufferContents() throws {
        var fw = ApplicationFirmware()
        for argument in [[UInt8](), [0xFF], [UInt8](repeating: 0xAB, count: 256)] {
            let request = rawRequest(.read, .appBatteryLevel, argument)
            let reply = fw.reply(request)
            expectReply(reply, to: request)
            #expect(try AppSettings.batteryLevel.decode(reply.buffer) == 100)
        }
    }
}
