import LightX
import Testing
@testable import HeadsetSimulator

@Suite struct FirmwareEventTests {
    func expectPush(_ packets: [Packet], _ command: Command, _ value: UInt32,
                    sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(packets.count == 1, sourceLocation: sourceLocation)
        let push = try #require(packets.first, sourceLocation: sourceLocation)
        #expect(push.isPush && push.command == command, sourceLocation: sourceLocation)
        #expect(push.header.source == .application && push.header.destination == .bluetooth, sourceLocation: sourceLocation)
        #expect(push.opcode == .write && push.header.type == .nonblocking, sourceLocation: sourceLocation)
        #expect(try ValueCodec<UInt32>.uint32("push").decode(push.buffer) == value, sourceLocation: sourceLocation)
    }

    @Test func ancButtonTogglesAncAndPushes() throws {
        var fw = ApplicationFirmware()
        try expectPush(fw.pressButton(.anc), .appPushANCEnable, 1)
        #expect(fw.state.ancEnabled)
        try expectPush(fw.pressButton(.anc), .appPushANCEnable, 0)
        #expect(!fw.state.ancEnabled)
    }

    @Test func ambientButtonCyclesTheAwarenessPreset() throws {
        var fw = ApplicationFirmware()
        for expected: UInt32 in [1, 2, 3, 0, 1] {
            try expectPush(fw.pressButton(.ambient), .appPushANCAwarenessPreset, expected)
            #expect(fw.state.awarenessPreset == expected)
        }
        #expect(!fw.state.ancEnabled)
    }

    @Test func ancButtonCyclesAmbientWhenTheSmartButtonIsOff() throws {
        var fw = ApplicationFirmware()
        _ = fw.reply(try AppSettings.smartButton.writeRequest(false))
        try expectPush(fw.pressButton(.anc), .appPushANCAwarenessPreset, 1)
        #expect(!fw.state.ancEnabled)
        _ = fw.reply(try AppSettings.smartButton.writeRequest(true))
        try expectPush(fw.pressButton(.anc), .appPushANCEnable, 1)
    }

    @Test func hostWritesCauseNoPush() throws {
        var fw = ApplicationFirmware()
        #expect(fw.handle(try AppSettings.ancEnabled.writeRequest(true)).allSatisfy { !$0.isPush })
        #expect(fw.handle(try AppSettings.awarenessPreset.writeRequest(.high)).allSatisfy { !$0.isPush })
    }

    @Test func batteryDrainsOnePercentPerInterval() throws {
        var fw = ApplicationFirmware(drainInterval: .seconds(60))
        #expect(fw.advanceTime(by: .seconds(59)).isEmpty)
        try expectPush(fw.advanceTime(by: .seconds(1)), .appPushBatteryLevel, 99)
        try expectPush(fw.advanceTime(by: .seconds(180)), .appPushBatteryLevel, 96)
        #expect(fw.advanceTime(by: .seconds(30)).isEmpty)
        try expectPush(fw.advanceTime(by: .seconds(30)), .appPushBatteryLevel, 95)
        #expect(try AppSettings.batteryLevel.decode(fw.reply(AppSettings.batteryLevel.readRequest()).buffer) == 95)
    }

    @Test func batteryStopsAtFivePercentThenTheChargerRefillsIt() throws {
        var state = HeadsetState.factory()
        state.batteryPercent = 6
        var fw = ApplicationFirmware(state: state, drainInterval: .seconds(1))
        try expectPush(fw.advanceTime(by: .seconds(1)), .appPushBatteryLevel, 5)
        try expectPush(fw.advanceTime(by: .seconds(1)), .appPushBatteryLevel, 100)
        try expectPush(fw.advanceTime(by: .seconds(1)), .appPushBatteryLevel, 99)
        // A full cycle (96 steps) lands where it started: no change, no push.
        #expect(fw.advanceTime(by: .seconds(96)).isEmpty)
        #expect(fw.state.batteryPercent == 99)
    }

    @Test func hugeAndDegenerateTimeStepsAreSafe() throws {
        var fw = ApplicationFirmware(drainInterval: .nanoseconds(1))
        _ = fw.advanceTime(by: .seconds(Int64.max))
        _ = fw.advanceTime(by: .seconds(Int64.max))
        #expect((5...100).contains(fw.state.batteryPercent))
        #expect(fw.advanceTime(by: .seconds(-5)).isEmpty)
        var off = ApplicationFirmware(drainInterval: .zero)
        #expect(off.advanceTime(by: .seconds(1000)).isEmpty)
        #expect(off.state.batteryPercent == 100)
    }

    @Test func settingTheBatteryPushesOnlyOnChange() throws {
        var fw = ApplicationFirmware()
        #expect(fw.setBatteryLevel(100).isEmpty)
        try expectPush(fw.setBatteryLevel(42), .appPushBatteryLevel, 42)
        try expectPush(fw.setBatteryLevel(250), .appPushBatteryLevel, 100)
    }
}
