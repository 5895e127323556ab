import Foundation
import TestSupport
import Testing
import Transport
import Wearable
import WearableLink
import WearableSession
import WearableSimulator

@Suite(.timeLimit(.minutes(1))) struct SessionTests {
    @Test func openReadsTheInformationAndEverythingStartsDisabled() async throws {
        let f = try Fixture()
        let events = await f.session.events()
        try await f.session.open()
        #expect(await f.session.deviceInformation == WearableProfile.standardDevice)
        #expect(await f.session.sensorInformation == WearableProfile.standardSensors)
        #expect(await f.session.gestureInformation == WearableProfile.standardGestures)
        #expect(await f.session.sensorConfiguration?.enabledSensors == [])
        #expect(await f.session.sensorConfiguration?.entries.count == 4)
        #expect(await f.session.gestureConfiguration?.enabledGestures == [])
        #expect(await f.session.mtu == 247)
        #expect(try await f.session.readDeviceInformation() == WearableProfile.standardDevice)
        #expect(try await f.session.readGestureInformation() == WearableProfile.standardGestures)
        await f.session.close()
        #expect(await collect(events, 2) == [.didOpen, .didClose(nil)])
        #expect(await f.session.isOpen == false)
        await f.shutdown()
    }

    @Test func openingSomethingThatIsNotAWearableFails() async throws {
        let (client, server) = InMemoryTransport.pair()
        let peer = Task {
            // A peer that answers the MTU exchange and then names another service.
            var decoder = GATTStreamDecoder()
            while let chunk = try? await server.receive() {
                decoder.append(chunk)
                while case let .pdu(pdu)? = decoder.next() {
                    switch pdu {
                    case .exchangeMTURequest: try? await server.send(GATTFraming.encode(.exchangeMTUResponse(mtu: 100)))
                    case .discoverRequest:
                        try? await server.send(GATTFraming.encode(.discoverResponse(GATTServiceLayout(serviceUUID16: 0x180F, startHandle: 1, endHandle: 3, characteristics: []))))
                    default: break
                    }
                }
            }
        }
        let session = WearableDeviceSession(peer: "memory:other") { client }
        let events = await session.events()
        await #expect { try await session.open() } throws: { ($0 as? WearableSessionError)?.code == .notAWearable }
        let first = await collect(events, 1)
        guard case let .didFailToOpen(error)? = first.first else {
            Issue.record("expected didFailToOpen, got \(first)")
            return
        }
        #expect(error.code == .notAWearable)
        #expect(await session.isOpen == false)
        await server.close()
        await peer.value
    }

    @Test func aConnectFailureIsReportedAsFailedToOpen() async throws {
        let session = WearableDeviceSession(peer: "nowhere") { throw TransportError(.connectionRefused, "refused") }
        let events = await session.events()
        await #expect { try await session.open() } throws: { ($0 as? WearableSessionError)?.code == .connectionFailed }
        let got = await collect(events, 1)
        #expect(got.count == 1)
        if case .didFailToOpen = got.first {} else { Issue.record("expected didFailToOpen, got \(got)") }
    }

    @Test func anAcceptedConfigurationIsWrittenThenUpdated() async throws {
        let f = try Fixture()
        try await f.session.open()
        let events = await f.session.events()
        let result = try await f.session.configureSensors { c in
            c.disableAll()
            c.enable(sensor: .accelerometer, at: ._20ms)
            c.enable(sensor: .gyroscope, at: ._20ms)
        }
        #expect(result.enabledSensors == [.accelerometer, .gyroscope])
        #expect(result.enabledSensorsSamplePeriod == ._20ms)
        let gestures = try await f.session.configureGestures { $0.set(gesture: .doubleTap, enabled: true) }
        #expect(gestures.enabledGestures == [.doubleTap])
        let got = await collect(events, 4)
        #expect(got == [.didWriteSensorConfiguration, .didUpdateSensorConfiguration(result),
                        .didWriteGestureConfiguration, .didUpdateGestureConfiguration(gestures)])
        // The shared period changes for every enabled sensor in one write.
        let slower = try await f.session.configureSensors { $0.setEnabledSensorsSamplePeriod(._40ms) }
        #expect(slower.period(of: .accelerometer) == ._40ms && slower.period(of: .gyroscope) == ._40ms)
        #expect(f.device.linkConfigurations == [slower])
        let off = try await f.session.configureSensors { $0.disable(sensor: .gyroscope) }
        #expect(off.enabledSensors == [.accelerometer])
        await f.shutdown()
    }

    /// Each rule of the device, with the library's checks off: refused with its ATT error and a reason, reported as
    /// didFailToWrite, and the device's configuration unchanged.
    @Test(arguments: [
        ("period", ATTError.periodNotAvailable, [(SensorType.gyroscope, SamplePeriod._320ms)]),
        ("count", ATTError.tooManySensors, [(.accelerometer, ._40ms), (.gyroscope, ._40ms), (.rotation, ._40ms), (.gameRotation, ._40ms)]),
        ("budget", ATTError.payloadBudgetExceeded, [(.accelerometer, ._20ms), (.gyroscope, ._20ms), (.rotation, ._20ms)]),
        ("sensor", ATTError.sensorNotAvailable, [(.magnetometer, ._40ms)]),
    ])
    func theDeviceRefusesWhatBreaksItsRules(rule: String, expected: ATTError, enable: [(SensorType, SamplePeriod)]) async throws {
        let f = try Fixture()
        try await f.session.open()
        let before = try await f.session.configureSensors { $0.enable(sensor: .accelerometer, at: ._80ms) }
        let events = await f.session.events()
        await #expect(throws: WearableSessionError.self) {
            try await f.session.configureSensors(checked: false) { c in
                c.disableAll()
                for (s, p) in enable { c.enable(sensor: s, at: p) }
            }
        }
        let got = await collect(events, 1)
        guard case let .didFailToWriteSensorConfiguration(error)? = got.first else {
            Issue.record("\(rule): expected didFailToWrite, got \(got)")
            return
        }
        #expect(error.code == .refused, "\(rule)")
        #expect(error.attError == expected, "\(rule): \(error)")
        #expect(error.reason?.isEmpty == false, "\(rule)")
        #expect(f.device.statistics.refusals[expected.rawValue] == 1)
        #expect(try await f.session.readSensorConfiguration() == before)
        #expect(f.device.linkConfigurations == [before])
        await f.shutdown()
    }

    @Test func theLibraryRefusesWhatIsSurelyWrongBeforeSending() async throws {
        let f = try Fixture()
        try await f.session.open()
        let events = await f.session.events()
        for change: @Sendable (inout SensorConfiguration) -> Void in [
            { $0.enable(sensor: .magnetometer, at: ._40ms) },
            { $0.enable(sensor: .rotation, at: ._160ms) },
            { c in for s in [SensorType.accelerometer, .gyroscope, .rotation, .gameRotation] { c.enable(sensor: s, at: ._40ms) } },
        ] {
            await #expect { try await f.session.configureSensors(change) } throws: { ($0 as? WearableSessionError)?.code == .rejectedLocally }
        }
        let got = await collect(events, 3)
        #expect(got.allSatisfy { if case let .didFailToWriteSensorConfiguration(e) = $0 { e.code == .rejectedLocally } else { false } })
        #expect(f.device.statistics.refusals.isEmpty && f.device.statistics.writesAccepted == 0)
        await f.shutdown()
    }

    @Test func aGestureTheDeviceLacksIsRefused() async throws {
        var profile = WearableProfile()
        profile.deviceInformation.availableGestures = [.doubleTap]
        profile.gestureInformation = try GestureInformation([.init(gesture: .doubleTap, payloadLength: 0)])
        let f = try Fixture(profile: profile)
        try await f.session.open()
        await #expect { try await f.session.configureGestures { $0.set(gesture: .headNod, enabled: true) } } throws: {
            ($0 as? WearableSessionError)?.code == .rejectedLocally
        }
        await #expect { try await f.session.configureGestures(checked: false) { $0.set(gesture: .headNod, enabled: true) } } throws: {
            ($0 as? WearableSessionError)?.attError == .gestureNotAvailable
        }
        await f.shutdown()
    }

    @Test func everyListenerReceivesEverySampleInOrder() async throws {
        let f = try Fixture()
        try await f.session.open()
        let listeners = await [f.session.sensorReadings(), f.session.sensorReadings(), f.session.sensorReadings()]
        try await f.session.configureSensors { c in
            c.enable(sensor: .accelerometer, at: ._20ms)
            c.enable(sensor: .gyroscope, at: ._20ms)
        }
        let ticks = 25  // 2 samples per sensor per 40 ms transmission
        async let all = withTaskGroup(of: [SensorReading].self) { group in
            for l in listeners { group.addTask { await collect(l, 4 * ticks) } }
            return await group.reduce(into: [[SensorReading]]()) { $0.append($1) }
        }
        await f.pump(ticks: ticks)
        let received = await all
        #expect(received.count == 3)
        for r in received {
            #expect(r == received[0])
            #expect(r.count == 4 * ticks)
            for sensor in [SensorType.accelerometer, .gyroscope] {
                let times = r.filter { $0.sensor == sensor }.map(\.deviceTime)
                #expect(times.count == 2 * ticks)
                #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 20 }, "\(sensor)")
            }
            #expect(r.allSatisfy { $0.missingBefore == 0 })
        }
        let stats = await f.session.statistics
        #expect(stats[.accelerometer].samples == 2 * ticks && stats[.accelerometer].gaps == 0)
        #expect(stats.malformedNotifications == 0)
        await f.shutdown()
    }

    @Test func timestampsUnwrapAcrossTheU16Wrap() async throws {
        let f = try Fixture(profile: WearableProfile(bootTimestamp: 65_000))
        try await f.session.open()
        let readings = await f.session.sensorReadings()
        try await f.session.configureSensors { $0.enable(sensor: .gameRotation, at: ._20ms) }
        let ticks = 30  // 1.2 s: the u16 wraps after 0.536 s
        async let got = collect(readings, 2 * ticks)
        await f.pump(ticks: ticks)
        let r = await got
        #expect(r.count == 2 * ticks)
        #expect(r.contains { $0.timestamp < 1000 } && r.contains { $0.timestamp > 65_000 })
        #expect(zip(r, r.dropFirst()).allSatisfy { $1.deviceTime - $0.deviceTime == 20 })
        #expect((r.last?.deviceTime ?? 0) > 65_536)
        #expect(r.allSatisfy { Int64($0.timestamp) == $0.deviceTime % 65_536 })
        #expect(await f.session.statistics[.gameRotation].gaps == 0)
        await f.shutdown()
    }

    @Test func injectedGapsAreDetectedExactlyAndNothingElseIsFlagged() async throws {
        let f = try Fixture()
        f.device.dropSensorNotifications([3, 10, 11, 20])
        try await f.session.open()
        let readings = await f.session.sensorReadings()
        try await f.session.configureSensors { c in
            c.enable(sensor: .accelerometer, at: ._20ms)
            c.enable(sensor: .gyroscope, at: ._20ms)
        }
        let ticks = 30
        // One notification per transmission (4 records); 4 dropped.
        async let got = collect(readings, 4 * (ticks - 4))
        await f.pump(ticks: ticks)
        let r = await got
        #expect(r.count == 4 * (ticks - 4))
        let stats = await f.session.statistics
        let sent = f.device.statistics
        #expect(sent.sensorNotificationsDropped == 4)
        for sensor in [SensorType.accelerometer, .gyroscope] {
            #expect(stats[sensor].missingSamples == sent.recordsDropped[sensor], "\(sensor)")
            #expect(stats[sensor].missingSamples == 8)
            #expect(stats[sensor].gaps == 3, "\(sensor): 3, 10-11 and 20 are three runs")
            #expect(stats[sensor].outOfOrder == 0)
            let marked = r.filter { $0.sensor == sensor && $0.missingBefore > 0 }.map(\.missingBefore)
            #expect(marked == [2, 4, 2])
        }
        await f.shutdown()
    }

    @Test func aStalledSensorShowsAsAGapWhenItResumes() async throws {
        let f = try Fixture()
        try await f.session.open()
        let readings = await f.session.sensorReadings()
        try await f.session.configureSensors { c in
            c.enable(sensor: .accelerometer, at: ._40ms)
            c.enable(sensor: .gyroscope, at: ._40ms)
        }
        async let first = collect(readings, 10)
        await f.pump(ticks: 5)
        _ = await first
        f.device.stall(.gyroscope)
        await f.pump(ticks: 3)
        f.device.stall(.gyroscope, false)
        async let rest = collect(readings, 3 + 2 * 2)
        await f.pump(ticks: 2)
        let r = await rest
        #expect(r.filter { $0.sensor == .gyroscope }.map(\.missingBefore) == [3, 0])
        let stats = await f.session.statistics
        #expect(stats[.gyroscope].gaps == 1 && stats[.gyroscope].missingSamples == 3)
        #expect(stats[.accelerometer].gaps == 0)
        await f.shutdown()
    }

    @Test func malformedNotificationsAreCountedAndTheStreamGoesOn() async throws {
        let f = try Fixture()
        try await f.session.open()
        let readings = await f.session.sensorReadings()
        let events = await f.session.events()
        try await f.session.configureSensors { $0.enable(sensor: .accelerometer, at: ._40ms) }
        async let firstTwo = collect(readings, 2)
        await f.pump(ticks: 2)
        _ = await firstTwo
        await f.device.sendRawSensorData([0x07, 0x00, 0x01])  // an unknown sensor id
        await f.device.sendRawSensorData([0x00, 0x00])  // cut short
        await f.device.sendRawSensorData([0x05, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 3])  // a sensor the information does not list
        async let more = collect(readings, 3)
        await f.pump(ticks: 3)
        #expect(await more.count == 3)
        let stats = await f.session.statistics
        #expect(stats.malformedNotifications == 3)
        #expect(stats.malformedByCode == ["unknown-sensor": 1, "truncated": 1, "sensor-not-listed": 1])
        #expect(stats[.accelerometer].samples == 5 && stats[.accelerometer].gaps == 0)
        let got = await collect(events, 5)
        #expect(got.filter { if case .didReceiveMalformedNotification(.sensorData, _) = $0 { true } else { false } }.count == 3)
        await f.shutdown()
    }

    @Test func aDroppedLinkClosesWithAnErrorAndReopeningStartsDisabled() async throws {
        let f = try Fixture()
        let events = await f.session.events()
        try await f.session.open()
        let readings = await f.session.sensorReadings()
        let gestures = await f.session.gestureReadings()
        try await f.session.configureSensors { $0.enable(sensor: .accelerometer, at: ._20ms) }
        try await f.session.configureGestures { $0.set(gesture: .headNod, enabled: true) }
        async let some = collect(readings, 4)
        await f.pump(ticks: 2)
        #expect(await some.count == 4)
        async let rest = drain(readings)
        async let restGestures = drain(gestures)
        await f.device.dropLinks()
        _ = await rest  // the listeners end
        _ = await restGestures
        let got = await collect(events, 6)
        guard case let .didClose(error?)? = got.last else {
            Issue.record("expected didClose with an error, got \(got)")
            return
        }
        #expect(error.code == .disconnected)
        #expect(await f.session.isOpen == false)
        await #expect(throws: WearableSessionError.self) { try await f.session.readSensorConfiguration() }
        try await f.session.open()
        #expect(await f.session.sensorConfiguration?.enabledSensors == [])
        #expect(await f.session.gestureConfiguration?.enabledGestures == [])
        #expect(f.device.linkConfigurations.map(\.enabledSensors) == [[]])
        #expect(f.device.statistics.linksServed == 2)
        // The reopened session streams again.
        let again = await f.session.sensorReadings()
        try await f.session.configureSensors { $0.enable(sensor: .gyroscope, at: ._40ms) }
        async let next = collect(again, 2)
        await f.pump(ticks: 2)
        #expect(await next.map(\.sensor) == [.gyroscope, .gyroscope])
        await f.shutdown()
    }
}

@Suite(.timeLimit(.minutes(1))) struct PeriodChangeTests {
    /// Changing the shared period mid-stream is not a gap, and samples keep their order across the change.
    @Test func changingThePeriodIsNotAGap() async throws {
        let f = try Fixture()
        try await f.session.open()
        let readings = await f.session.sensorReadings()
        try await f.session.configureSensors { $0.enable(sensor: .accelerometer, at: ._20ms) }
        async let a = collect(readings, 10)
        await f.pump(ticks: 5)
        #expect(await a.count == 10)
        try await f.session.configureSensors { $0.setEnabledSensorsSamplePeriod(._80ms) }
        async let b = collect(readings, 3)
        await f.pump(ticks: 6)
        let slow = await b
        #expect(zip(slow, slow.dropFirst()).allSatisfy { $1.deviceTime - $0.deviceTime == 80 })
        try await f.session.configureSensors { $0.setEnabledSensorsSamplePeriod(._20ms) }
        async let c = collect(readings, 4)
        await f.pump(ticks: 2)
        #expect(await c.count == 4)
        let stats = await f.session.statistics
        #expect(stats[.accelerometer].gaps == 0 && stats[.accelerometer].outOfOrder == 0)
        await f.shutdown()
    }

    @Test func theUnwrapperAndTheGapDetectorAlone() {
        var u = TimestampUnwrapper()
        #expect([65_500, 65_520, 4, 24, 10].map { u.unwrap($0) } == [65_500, 65_520, 65_540, 65_560, 65_546])
        var g = GapDetector()
        #expect([0, 20, 40, 100, 120, 110, 140, 169].map { g.missing(before: $0, period: 20) } == [0, 0, 0, 2, 0, -1, 0, 0])
    }
}

@Suite(.timeLimit(.minutes(1))) struct NotificationSizeTests {
    /// Without an MTU exchange beyond 23 bytes, a transmission's records are split into notifications of at most
    /// 20 bytes, whole records each, and nothing is lost.
    @Test func aSmallMTUSplitsTransmissionsIntoWholeRecords() async throws {
        let f = try Fixture(options: .init(mtu: 23))
        try await f.session.open()
        #expect(await f.session.mtu == 23)
        let readings = await f.session.sensorReadings()
        try await f.session.configureSensors { c in
            c.enable(sensor: .accelerometer, at: ._20ms)
            c.enable(sensor: .gyroscope, at: ._20ms)
        }
        async let got = collect(readings, 40)
        await f.pump(ticks: 10)
        #expect(await got.count == 40)
        #expect(f.device.statistics.sensorNotificationsSent == 20, "two 20-byte notifications per transmission")
        let stats = await f.session.statistics
        #expect(stats.sensorNotifications == 20 && stats[.gyroscope].gaps == 0 && stats[.accelerometer].samples == 20)
        await f.shutdown()
    }

    @Test func tapsAreGestures() async throws {
        let f = try Fixture()
        try await f.session.open()
        let gestures = await f.session.gestureReadings()
        try await f.session.configureGestures { $0.set(gesture: .doubleTap, enabled: true) }
        f.device.tap()  // single taps are not enabled
        f.device.tap(double: true)
        async let got = collect(gestures, 1)
        await f.pump(ticks: 1)
        #expect(await got.map(\.gesture) == [.doubleTap])
        #expect(f.device.statistics.gesturesSent == [.doubleTap: 1])
        await f.shutdown()
    }
}
