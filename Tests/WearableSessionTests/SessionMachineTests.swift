import Testing
import Wearable
import WearableSession
import WearableSimulator

/// `WearableSessionMachine` alone, on explicit times: every event in every state (closed, opening, open,
/// reconnecting with an attempt under way, reconnecting and waiting), the backoff and its limit, the configurations
/// written again, and the readings' bookkeeping (unwrapped times, gap marks, statistics).
@Suite struct SessionMachineTests {
    typealias Machine = WearableSessionMachine
    static let lost = WearableSessionError(.disconnected, "lost", category: .connection)
    static let refused = WearableSessionError(.connectionFailed, "refused", category: .connection)
    static let t0 = Duration.seconds(10)

    enum Phase: String, CaseIterable, CustomStringConvertible {
        case closed, opening, open, connecting, waiting
        var description: String { rawValue }
    }

    static var disabledSensors: SensorConfiguration { try! SensorConfiguration(disabled: [.accelerometer, .gyroscope, .rotation, .gameRotation]) }
    static var disabledGestures: GestureConfiguration { try! GestureConfiguration(GestureType.allCases.map { .init(gesture: $0, enabled: false) }) }

    static func information(mtu: UInt16 = 100) -> Machine.LinkInformation {
        Machine.LinkInformation(mtu: mtu, device: WearableProfile.standardDevice, sensors: WearableProfile.standardSensors,
                                gestures: WearableProfile.standardGestures, sensorConfiguration: disabledSensors,
                                gestureConfiguration: disabledGestures)
    }

    /// A machine in `phase` (with a reconnect policy unless told), and the id of its link (the last one it named).
    static func machine(_ phase: Phase, policy: ReconnectPolicy? = ReconnectPolicy()) -> (Machine, WearableLinkID) {
        var m = Machine(peer: "memory:wearable", reconnect: policy)
        guard phase != .closed else { return (m, WearableLinkID(1)) }
        guard case let .connect(first) = try! m.open() else { fatalError("open from closed connects") }
        guard phase != .opening else { return (m, first) }
        m.linkInformation(information(), link: first)
        _ = m.linkEstablished(first, at: .zero)
        guard phase != .open else { return (m, first) }
        guard case let .connect(second, _)? = m.linkLost(first, lost, at: t0).last else { fatalError("a loss with a policy connects") }
        guard phase != .connecting else { return (m, second) }
        _ = m.linkFailed(second, refused, at: t0)
        return (m, second)
    }

    /// A sensor data notification of one accelerometer record at `timestamp`.
    static func accelerometer(at timestamp: UInt16) -> [UInt8] {
        try! SensorDataNotification(records: [SensorRecord(timestamp: timestamp, sample: .accelerometer(RawVector(x: 1, y: 2, z: 3), accuracy: .high))]).encoded()
    }

    // MARK: Each event in each state

    @Test(arguments: Phase.allCases)
    func openInEachState(_ phase: Phase) throws {
        var (m, _) = Self.machine(phase)
        switch phase {
        case .closed:
            #expect(try m.open() == .connect(WearableLinkID(1)))
            guard case let .opening(link) = m.state else { Issue.record("\(m.state)"); return }
            #expect(link.id == WearableLinkID(1) && link.sensorConfiguration == nil)
        case .open:
            let before = m.state
            #expect(try m.open() == .alreadyOpen)
            #expect(m.state == before)
        case .opening, .connecting, .waiting:
            let before = m.state
            #expect(throws: WearableSessionError.self) { try m.open() }
            do { _ = try m.open() } catch {
                #expect(error.code == .notOpen && error.category == .usage)
                #expect(error.message.hasSuffix(phase == .opening ? "already opening" : "already reconnecting"), "\(error.message)")
            }
            #expect(m.state == before)
        }
    }

    @Test(arguments: Phase.allCases)
    func linkEstablishedInEachState(_ phase: Phase) {
        var (m, link) = Self.machine(phase)
        let before = m.state
        let actions = m.linkEstablished(link, at: Self.t0 + .milliseconds(350))
        switch phase {
        case .opening:
            #expect(actions == [.publish(.didOpen)])
            #expect(m.isOpen && m.currentLink?.id == link)
        case .connecting:
            #expect(actions == [.publish(.didReconnect(gap: .milliseconds(350), attempts: 1))])
            #expect(m.isOpen && !m.isReconnecting && m.currentLink?.id == link)
            #expect(m.statistics.reconnects == 1 && m.statistics.linkDownTime == .milliseconds(350))
        case .closed, .open, .waiting:
            #expect(actions == [] && m.state == before)
        }
        // A link that is not the current one never counts.
        var (n, other) = Self.machine(phase)
        let unchanged = n.state
        #expect(n.linkEstablished(WearableLinkID(other.number + 7), at: .zero) == [] && n.state == unchanged)
    }

    @Test(arguments: Phase.allCases)
    func linkFailedInEachState(_ phase: Phase) {
        var (m, link) = Self.machine(phase)
        let before = m.state
        let actions = m.linkFailed(link, Self.refused, at: Self.t0)
        switch phase {
        case .opening:
            #expect(actions == [.endListeners, .publish(.didFailToOpen(Self.refused))])
            #expect(m.state == .closed)
        case .connecting:
            #expect(actions == [.startTimer(at: Self.t0 + .milliseconds(100))])
            guard case let .reconnecting(r) = m.state else { Issue.record("\(m.state)"); return }
            #expect(r.attempt == .waiting(failed: 1, retryAt: Self.t0 + .milliseconds(100)) && r.lostAt == Self.t0 && r.lost == Self.lost)
            #expect(m.currentLink == nil && m.sensorConfiguration == nil)
        case .closed, .open, .waiting:
            #expect(actions == [] && m.state == before)
        }
    }

    @Test(arguments: Phase.allCases)
    func linkLostInEachState(_ phase: Phase) {
        var (m, link) = Self.machine(phase)
        let before = m.state
        let actions = m.linkLost(link, Self.lost, at: Self.t0 + .seconds(1))
        switch phase {
        case .opening:
            #expect(actions == [.dropLink(close: false), .endListeners, .publish(.didFailToOpen(Self.lost))])
            #expect(m.state == .closed)
        case .open:
            #expect(actions == [.dropLink(close: false), .publish(.didLoseLink(Self.lost)), .connect(WearableLinkID(2), rewrite: .init())])
            guard case let .reconnecting(r) = m.state else { Issue.record("\(m.state)"); return }
            #expect(r.lostAt == Self.t0 + .seconds(1) && r.attempt == .connecting(number: 1, link: .init(id: WearableLinkID(2))))
            #expect(m.isReconnecting && !m.isOpen)
        case .connecting:
            // The attempt's own link died: that attempt failed.
            #expect(actions == [.dropLink(close: false), .startTimer(at: Self.t0 + .seconds(1) + .milliseconds(100))])
            guard case let .reconnecting(r) = m.state else { Issue.record("\(m.state)"); return }
            #expect(r.attempt == .waiting(failed: 1, retryAt: Self.t0 + .milliseconds(1100)))
        case .closed, .waiting:
            #expect(actions == [] && m.state == before)
        }
        // An earlier link's loss changes nothing.
        var (n, current) = Self.machine(phase)
        let unchanged = n.state
        #expect(n.linkLost(WearableLinkID(current.number + 7), Self.lost, at: .zero) == [] && n.state == unchanged)
    }

    @Test func aLostLinkWithoutAPolicyClosesTheSession() {
        var (m, link) = Self.machine(.open, policy: nil)
        #expect(m.linkLost(link, Self.lost, at: Self.t0) == [.dropLink(close: false), .endListeners, .publish(.didClose(Self.lost))])
        #expect(m.state == .closed && !m.isReconnecting)
    }

    @Test(arguments: Phase.allCases)
    func retryTimerInEachState(_ phase: Phase) {
        var (m, _) = Self.machine(phase)
        let before = m.state
        guard phase == .waiting else {
            #expect(m.retryTimerFired(at: Self.t0 + .seconds(5)) == [] && m.state == before)
            return
        }
        // Early: wait on; on time: the next attempt on a new link.
        #expect(m.retryTimerFired(at: Self.t0 + .milliseconds(50)) == [.startTimer(at: Self.t0 + .milliseconds(100))])
        #expect(m.state == before)
        #expect(m.retryTimerFired(at: Self.t0 + .milliseconds(100)) == [.connect(WearableLinkID(3), rewrite: .init())])
        guard case let .reconnecting(r) = m.state else { Issue.record("\(m.state)"); return }
        #expect(r.attempt == .connecting(number: 2, link: .init(id: WearableLinkID(3))))
    }

    @Test(arguments: Phase.allCases)
    func closeInEachState(_ phase: Phase) {
        var (m, _) = Self.machine(phase)
        let actions = m.close()
        switch phase {
        case .closed: #expect(actions == [])
        case .opening, .open: #expect(actions == [.dropLink(close: true), .endListeners, .publish(.didClose(nil))])
        case .connecting, .waiting: #expect(actions == [.stopReconnecting, .dropLink(close: true), .endListeners, .publish(.didClose(nil))])
        }
        #expect(m.state == .closed && !m.isOpen && !m.isReconnecting && m.currentLink == nil)
        #expect(m.close() == [], "closing twice does nothing")
    }

    @Test(arguments: Phase.allCases)
    func notificationsCountOnlyOnTheCurrentLinkOnceItsInformationIsKnown(_ phase: Phase) {
        var (m, link) = Self.machine(phase)
        let got = m.notification(.sensorData, Self.accelerometer(at: 100), link: link, at: .seconds(1))
        switch phase {
        case .open:
            guard case let .readings(r) = got else { Issue.record("\(got)"); return }
            #expect(r.count == 1 && r[0].sensor == .accelerometer && r[0].deviceTime == 100 && r[0].hostTime == .seconds(1) && r[0].missingBefore == 0)
            #expect(m.statistics.sensorNotifications == 1 && m.statistics[.accelerometer].samples == 1)
        case .connecting:
            // The new link's information is not read yet: the last one's layout is kept, so its samples count.
            guard case .readings = got else { Issue.record("\(got)"); return }
        case .opening:
            // Before the information is read there is nothing to decode with.
            #expect(got == .nothing && m.statistics.sensorNotifications == 0)
        case .closed, .waiting:
            #expect(got == .nothing && m.statistics.sensorNotifications == 0)
        }
        var (n, current) = Self.machine(phase)
        #expect(n.notification(.sensorData, Self.accelerometer(at: 100), link: WearableLinkID(current.number + 7), at: .zero) == .nothing)
        #expect(n.statistics == WearableStatistics())
    }

    @Test(arguments: Phase.allCases)
    func configurationsCanBeChangedOnlyWhenOpen(_ phase: Phase) throws {
        var (m, link) = Self.machine(phase)
        if phase == .open {
            let (id, sensors) = try m.sensorConfigurationToChange()
            let (gid, gestures) = try m.gestureConfigurationToChange()
            #expect(id == link && gid == link && sensors == Self.disabledSensors && gestures == Self.disabledGestures)
        } else {
            #expect(throws: WearableSessionError.self) { try m.sensorConfigurationToChange() }
            #expect(throws: WearableSessionError.self) { try m.gestureConfigurationToChange() }
        }
        // A configuration read on a link that is not current changes nothing and reports nothing.
        let before = m.state
        var c = Self.disabledSensors
        c.enable(sensor: .gyroscope, at: ._40ms)
        let actions = m.sensorConfigurationRead(c, link: link, accepted: true)
        if phase == .open || phase == .opening || phase == .connecting {
            #expect(actions == [.publish(.didUpdateSensorConfiguration(c))])
            #expect(m.sensorConfiguration == c)
        } else {
            #expect(actions == [] && m.state == before)
        }
        var g = Self.disabledGestures
        g.set(gesture: .headNod, enabled: true)
        let gestureActions = m.gestureConfigurationUpdated(g, link: link, accepted: true)
        #expect(gestureActions == (m.currentLink == nil ? [] : [.publish(.didUpdateGestureConfiguration(g))]))
    }

    // MARK: Reconnecting

    /// Attempts at once, then 100, 200, 400 ms apart; the reconnect counted with its gap and attempts; the accepted
    /// configurations written again (only what enables something).
    @Test func theMachineBacksOffAndWritesTheAcceptedConfigurationsAgain() throws {
        var (m, first) = Self.machine(.open)
        var sensors = Self.disabledSensors
        sensors.enable(sensor: .accelerometer, at: ._40ms)
        _ = m.sensorConfigurationRead(sensors, link: first, accepted: true)
        // A gesture configuration accepted with nothing enabled is not written again.
        _ = m.gestureConfigurationUpdated(Self.disabledGestures, link: first, accepted: true)
        let t0 = Self.t0
        let rewrite = Machine.Accepted(sensors: sensors, gestures: nil)
        #expect(m.linkLost(first, Self.lost, at: t0).last == .connect(WearableLinkID(2), rewrite: rewrite))
        #expect(m.linkFailed(WearableLinkID(2), Self.refused, at: t0) == [.startTimer(at: t0 + .milliseconds(100))])
        #expect(m.retryTimerFired(at: t0 + .milliseconds(100)) == [.connect(WearableLinkID(3), rewrite: rewrite)])
        #expect(m.linkFailed(WearableLinkID(3), Self.refused, at: t0 + .milliseconds(100)) == [.startTimer(at: t0 + .milliseconds(300))])
        #expect(m.retryTimerFired(at: t0 + .milliseconds(300)) == [.connect(WearableLinkID(4), rewrite: rewrite)])
        // A late failure of an earlier attempt's link changes nothing.
        #expect(m.linkFailed(WearableLinkID(3), Self.refused, at: t0 + .milliseconds(320)) == [])
        m.linkInformation(Self.information(), link: WearableLinkID(4))
        #expect(m.sensorConfiguration == Self.disabledSensors, "the device starts a link disabled")
        _ = m.sensorConfigurationRead(sensors, link: WearableLinkID(4))
        #expect(m.linkEstablished(WearableLinkID(4), at: t0 + .milliseconds(350)) == [.publish(.didReconnect(gap: .milliseconds(350), attempts: 3))])
        #expect(m.statistics.reconnects == 1 && m.statistics.linkDownTime == .milliseconds(350))
        // The accepted configurations go on to the next loss.
        #expect(m.linkLost(WearableLinkID(4), Self.lost, at: t0 + .seconds(2)).last == .connect(WearableLinkID(5), rewrite: rewrite))
        #expect(m.linkEstablished(WearableLinkID(5), at: t0 + .seconds(2)) == [.publish(.didReconnect(gap: .zero, attempts: 1))])
        #expect(m.statistics.reconnects == 2 && m.statistics.linkDownTime == .milliseconds(350))
    }

    @Test func theMachineGivesUpAtItsLimitAfterALastAttemptThere() {
        var (m, first) = Self.machine(.open, policy: ReconnectPolicy(giveUpAfter: .milliseconds(250)))
        let t0 = Self.t0
        _ = m.linkLost(first, Self.lost, at: t0)
        #expect(m.linkFailed(WearableLinkID(2), Self.refused, at: t0) == [.startTimer(at: t0 + .milliseconds(100))])
        _ = m.retryTimerFired(at: t0 + .milliseconds(100))
        // 100 + 200 is past the limit: the last attempt is at the limit itself.
        #expect(m.linkFailed(WearableLinkID(3), Self.refused, at: t0 + .milliseconds(100)) == [.startTimer(at: t0 + .milliseconds(250))])
        #expect(m.retryTimerFired(at: t0 + .milliseconds(250)) == [.connect(WearableLinkID(4), rewrite: .init())])
        let actions = m.linkFailed(WearableLinkID(4), Self.refused, at: t0 + .milliseconds(250))
        guard case let .publish(.didClose(error?))? = actions.last, actions.count == 2, actions.first == .endListeners else {
            Issue.record("\(actions)")
            return
        }
        #expect(error.code == .disconnected && error.category == .connection)
        #expect(error.message == "lost; not back within 0.25 seconds (last attempt: refused)", "\(error.message)")
        #expect(m.state == .closed && m.statistics.reconnects == 0)
    }

    /// A device that refuses the configuration it took before, or that is not a wearable: no retry changes that.
    @Test(arguments: [WearableSessionError.Code.refused, .notAWearable])
    func aPermanentFailureGivesUpAtOnce(_ code: WearableSessionError.Code) {
        var (m, first) = Self.machine(.open)
        _ = m.linkLost(first, Self.lost, at: .zero)
        let failure = WearableSessionError(code, "no", category: .device)
        let actions = m.linkFailed(WearableLinkID(2), failure, at: .zero)
        #expect(actions.first == .endListeners && actions.count == 2 && m.state == .closed)
        guard case let .publish(.didClose(error?))? = actions.last else { Issue.record("\(actions)"); return }
        #expect(error.message == "lost; not back (last attempt: no)")
    }

    // MARK: Opening and the readings

    @Test func openingStartsTheStatisticsAndTheDeviceTimeAfresh() throws {
        var (m, link) = Self.machine(.open)
        _ = m.notification(.sensorData, Self.accelerometer(at: 60_000), link: link, at: .zero)
        #expect(m.mtu == 100 && m.deviceInformation == WearableProfile.standardDevice && m.gestureInformation == WearableProfile.standardGestures)
        _ = m.close()
        #expect(m.statistics[.accelerometer].samples == 1, "kept after close")
        #expect(m.deviceInformation == WearableProfile.standardDevice, "kept after close")
        guard case let .connect(next) = try m.open() else { Issue.record("open"); return }
        #expect(next == WearableLinkID(2) && m.statistics == WearableStatistics())
        m.linkInformation(Self.information(), link: next)
        _ = m.linkEstablished(next, at: .zero)
        // Had the unwrapper gone on from 60000, 100 would be after the wrap (65636).
        guard case let .readings(r) = m.notification(.sensorData, Self.accelerometer(at: 100), link: next, at: .zero) else { Issue.record("readings"); return }
        #expect(r.first?.deviceTime == 100)
    }

    /// Gaps by the configured period; a period being written counts as the longer of both until read back; a
    /// changed period and a new link start a sensor's detection afresh; the device time goes on across a reconnect.
    @Test func gapsAreMarkedByThePeriodAndStartAfreshOnANewPeriodOrLink() throws {
        var (m, link) = Self.machine(.open)
        var at40 = Self.disabledSensors
        at40.enable(sensor: .accelerometer, at: ._40ms)
        _ = m.sensorConfigurationRead(at40, link: link, accepted: true)
        func missing(_ t: UInt16, on link: WearableLinkID) -> Int? {
            guard case let .readings(r) = m.notification(.sensorData, Self.accelerometer(at: t), link: link, at: .zero) else { return nil }
            return r.first?.missingBefore
        }
        #expect(missing(1000, on: link) == 0)
        #expect(missing(1040, on: link) == 0)
        #expect(missing(1160, on: link) == 2, "two periods of 40 ms missing")
        // Writing 80 ms: until read back, 80 ms steps are not gaps.
        var at80 = at40
        at80.enable(sensor: .accelerometer, at: ._80ms)
        try m.sensorWriteStarted(at80, link: link, checked: true)
        #expect(m.currentLink?.pendingSensorConfiguration == at80)
        #expect(missing(1240, on: link) == 0)
        m.sensorWriteEnded(link: link)
        #expect(m.currentLink?.pendingSensorConfiguration == nil)
        #expect(missing(1320, on: link) == 1, "40 ms again: one missing")
        // The period read back changes: the next sample starts afresh.
        _ = m.sensorConfigurationRead(at80, link: link)
        #expect(missing(2000, on: link) == 0)
        #expect(missing(2160, on: link) == 1)
        // A reconnect (to a device that kept its configuration: no period changes): the first sample on the new link
        // is no gap, and its time goes on from the old line.
        _ = m.linkLost(link, Self.lost, at: .zero)
        var kept = Self.information()
        kept.sensorConfiguration = at80
        m.linkInformation(kept, link: WearableLinkID(2))
        _ = m.linkEstablished(WearableLinkID(2), at: .seconds(1))
        #expect(missing(5000, on: WearableLinkID(2)) == 0)
        #expect(missing(5080, on: WearableLinkID(2)) == 0)
        let stats = m.statistics[.accelerometer]
        #expect(stats.samples == 9 && stats.gaps == 3 && stats.missingSamples == 4 && stats.outOfOrder == 0)
        // A sample not after the previous one: counted out of order, no gap.
        #expect(missing(5080, on: WearableLinkID(2)) == 0)
        #expect(m.statistics[.accelerometer].outOfOrder == 1)
    }

    @Test func gesturesConfigurationsMalformedAndUnknownNotifications() {
        var (m, link) = Self.machine(.open)
        let gesture = m.notification(.gestureData, GestureData(gesture: .doubleTap, timestamp: 65_530).encoded(), link: link, at: .seconds(2))
        guard case let .gesture(g0) = gesture else { Issue.record("\(gesture)"); return }
        #expect(g0.gesture == .doubleTap && g0.timestamp == 65_530 && g0.deviceTime == 65_530 && g0.hostTime == .seconds(2))
        // The same line as the sensors: a timestamp after the wrap goes on from it.
        guard case let .readings(r) = m.notification(.sensorData, Self.accelerometer(at: 10), link: link, at: .zero) else { Issue.record("readings"); return }
        #expect(r.first?.deviceTime == 65_546)
        #expect(m.statistics.gestures == 1)
        var c = Self.disabledSensors
        c.enable(sensor: .gyroscope, at: ._20ms)
        #expect(m.notification(.sensorConfiguration, c.encoded(), link: link, at: .zero) == .event(.didUpdateSensorConfiguration(c)))
        #expect(m.sensorConfiguration == c)
        var g = Self.disabledGestures
        g.set(gesture: .headShake, enabled: true)
        #expect(m.notification(.gestureConfiguration, g.encoded(), link: link, at: .zero) == .event(.didUpdateGestureConfiguration(g)))
        #expect(m.gestureConfiguration == g)
        // Notified configurations are not accepted ones: a reconnect writes nothing.
        #expect(m.linkLost(link, Self.lost, at: .zero).last == .connect(WearableLinkID(2), rewrite: .init()))
        var (n, nl) = Self.machine(.open)
        guard case .event(.didReceiveMalformedNotification(.sensorData, _)) = n.notification(.sensorData, [0x01], link: nl, at: .zero) else {
            Issue.record("malformed sensor data")
            return
        }
        guard case .event(.didReceiveMalformedNotification(.gestureData, _)) = n.notification(.gestureData, [0x81], link: nl, at: .zero) else {
            Issue.record("malformed gesture")
            return
        }
        #expect(n.notification(nil, [1, 2, 3], link: nl, at: .zero) == .nothing)
        #expect(n.notification(.deviceInformation, [1, 2, 3], link: nl, at: .zero) == .nothing)
        #expect(n.statistics.malformedNotifications == 2 && n.statistics.malformedByCode.values.reduce(0, +) == 2)
        #expect(n.statistics.unknownNotifications == 2)
    }

    /// The library's checks refuse with the rule broken, before anything is written (nothing pending); unchecked, the
    /// device judges.
    @Test func theChecksRefuseWhatTheDeviceSaysCannotWork() throws {
        var (m, link) = Self.machine(.open)
        var noMagnetometer = Self.disabledSensors
        noMagnetometer.enable(sensor: .magnetometer, at: ._40ms)
        var slowRotation = Self.disabledSensors
        slowRotation.enable(sensor: .rotation, at: ._320ms)
        var four = Self.disabledSensors
        for s in [SensorType.accelerometer, .gyroscope, .rotation, .gameRotation] { four.enable(sensor: s, at: ._40ms) }
        for (c, rule) in [(noMagnetometer, WearableRule.sensorNotAvailable), (slowRotation, .periodNotOffered), (four, .tooManySensors)] {
            do {
                try m.sensorWriteStarted(c, link: link, checked: true)
                Issue.record("\(rule) not refused")
            } catch {
                #expect(error.code == .rejectedLocally && error.rule == rule, "\(error)")
            }
            #expect(m.currentLink?.pendingSensorConfiguration == nil)
            try m.sensorWriteStarted(c, link: link, checked: false)
            #expect(m.currentLink?.pendingSensorConfiguration == c)
            m.sensorWriteEnded(link: link)
        }
        var g = Self.disabledGestures
        g.set(gesture: .headNod, enabled: true)
        try m.gestureWriteStarted(g, checked: true)
        var fewer = WearableProfile.standardGestures
        fewer = try GestureInformation(fewer.entries.filter { $0.gesture != .headNod })
        m.informationRead(.gestures(fewer))
        #expect(m.gestureInformation == fewer)
        #expect(throws: WearableSessionError.self) { try m.gestureWriteStarted(g, checked: true) }
        try m.gestureWriteStarted(g, checked: false)
        #expect(m.writeAccepted(sensors: true) == [.publish(.didWriteSensorConfiguration)])
        #expect(m.writeAccepted(sensors: false) == [.publish(.didWriteGestureConfiguration)])
        #expect(m.writeFailed(sensors: true, Self.refused) == [.publish(.didFailToWriteSensorConfiguration(Self.refused))])
        #expect(m.writeFailed(sensors: false, Self.refused) == [.publish(.didFailToWriteGestureConfiguration(Self.refused))])
    }

    /// A caller's read of the gesture configuration is known but not reported; information read again is known.
    @Test func readsAreKnown() {
        var (m, link) = Self.machine(.open)
        var g = Self.disabledGestures
        g.set(gesture: .singleTap, enabled: true)
        m.gestureConfigurationRead(g, link: link)
        #expect(m.gestureConfiguration == g)
        var device = WearableProfile.standardDevice
        device.maxActiveSensors = 4
        m.informationRead(.device(device))
        #expect(m.deviceInformation == device)
        m.informationRead(.sensors(WearableProfile.standardSensors))
        #expect(m.sensorInformation == WearableProfile.standardSensors)
        var four = Self.disabledSensors
        for s in [SensorType.accelerometer, .gyroscope, .rotation, .gameRotation] { four.enable(sensor: s, at: ._40ms) }
        #expect(throws: Never.self) { try m.sensorWriteStarted(four, link: link, checked: true) }
    }
}
