import TestSupport
import Testing
import Transport
import Wearable
import WearableLink
import WearableSession
import WearableSimulator

/// The device rule a refused configuration broke travels with the error (`WearableRule`), whether the library's
/// checks or the device refused it, so a caller (the CLI) names it; bad notifications of every kind are counted and
/// the stream goes on.
@Suite(.timeLimit(.minutes(1))) struct RuleTests {
    @Test(arguments: [
        (WearableRule.periodNotOffered, [(SensorType.gyroscope, SamplePeriod._320ms)]),
        (.tooManySensors, [(.accelerometer, ._40ms), (.gyroscope, ._40ms), (.rotation, ._40ms), (.gameRotation, ._40ms)]),
        (.payloadBudget, [(.accelerometer, ._20ms), (.gyroscope, ._20ms), (.rotation, ._20ms)]),
        (.sensorNotAvailable, [(.magnetometer, ._40ms)]),
    ])
    func theRuleOfEveryRefusal(rule: WearableRule, enable: [(SensorType, SamplePeriod)]) async throws {
        let f = try Fixture()
        try await f.session.open()
        for checked in [true, false] {
            do {
                try await f.session.configureSensors(checked: checked) { c in
                    for (s, p) in enable { c.enable(sensor: s, at: p) }
                }
                Issue.record("\(rule) (checked \(checked)): accepted")
            } catch let error as WearableSessionError {
                // The payload budget is the device's alone: the library has no rule for it.
                let byLibrary = checked && rule != .payloadBudget
                #expect(error.code == (byLibrary ? .rejectedLocally : .refused), "\(rule) checked \(checked): \(error)")
                #expect(error.rule == rule, "\(rule) checked \(checked): \(error)")
                #expect(error.category == (byLibrary ? .usage : .device))
            }
        }
        #expect(f.device.statistics.writesAccepted == 0)
        await f.shutdown()
    }

    @Test func aGestureTheDeviceLacksHasItsRule() async throws {
        var profile = WearableProfile()
        profile.deviceInformation.availableGestures = [.doubleTap]
        profile.gestureInformation = try GestureInformation([.init(gesture: .doubleTap, payloadLength: 0)])
        let f = try Fixture(profile: profile)
        try await f.session.open()
        for checked in [true, false] {
            await #expect { try await f.session.configureGestures(checked: checked) { $0.set(gesture: .headShake, enabled: true) } } throws: {
                ($0 as? WearableSessionError)?.rule == .gestureNotAvailable
            }
        }
        #expect(WearableRule(attError: .valueNotAllowed) == nil, "a generic ATT error names no rule")
        await f.shutdown()
    }

    /// A record with an accuracy byte above 3, a record cut short after a good one, gesture notifications that are
    /// too short or name no gesture: each counted by its code and reported, never a trap; samples and gestures go on.
    @Test func malformedSamplesAndGesturesAreCountedAndTheStreamGoesOn() async throws {
        let f = try Fixture()
        try await f.session.open()
        let readings = await f.session.sensorReadings(), gestures = await f.session.gestureReadings()
        try await f.session.configureSensors { $0.enable(sensor: .accelerometer, at: ._40ms) }
        try await f.session.configureGestures { $0.set(gesture: .singleTap, enabled: true) }
        let events = await f.session.events()
        async let first = collect(readings, 1)
        await f.pump(ticks: 1)
        #expect(await first.count == 1)
        await f.device.sendRawSensorData([0x00, 0x00, 0x01, 0, 1, 0, 2, 0, 3, 9])  // accuracy 9
        await f.device.sendRawSensorData([0x00, 0x00, 0x01, 0, 1, 0, 2, 0, 3, 3, 0x01, 0x00])  // a good record, then one cut short
        await f.device.sendRawGestureData([0x80, 0x00])  // cut short
        await f.device.sendRawGestureData([0x7f, 0x00, 0x10])  // no such gesture
        f.device.tap()
        async let more = collect(readings, 2)
        async let tap = collect(gestures, 1)
        await f.pump(ticks: 2)
        #expect(await more.map(\.missingBefore) == [0, 0], "the refused notifications are not samples, nor gaps")
        #expect(await tap.map(\.gesture) == [.singleTap])
        let stats = await f.session.statistics
        #expect(stats.malformedNotifications == 4)
        #expect(stats.malformedByCode == ["malformed": 1, "truncated": 2, "unknown-gesture": 1], "\(stats.malformedByCode)")
        #expect(stats[.accelerometer].samples == 3 && stats[.accelerometer].gaps == 0)
        let got = await collect(events, 4)
        #expect(got.filter { if case .didReceiveMalformedNotification(.gestureData, _) = $0 { true } else { false } }.count == 2, "\(got)")
        await f.shutdown()
    }
}
