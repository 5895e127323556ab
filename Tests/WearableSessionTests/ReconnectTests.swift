import Synchronization
import TestSupport
import Testing
import Transport
import Wearable
import WearableSession
import WearableSimulator

/// Reconnecting after a lost link: the policy's backoff, then the session driving its machine on a `ManualClock` (no
/// sleeps: the backoff waits are the clock's, advanced by the test). The machine alone: `SessionMachineTests`.
@Suite(.timeLimit(.minutes(1))) struct ReconnectTests {

    @Test func theBackoffDoublesFrom100msTo1s() {
        let p = ReconnectPolicy()
        #expect((1...7).map { p.delay(afterFailedAttempts: $0) } == [.milliseconds(100), .milliseconds(200), .milliseconds(400),
                                                                    .milliseconds(800), .seconds(1), .seconds(1), .seconds(1)])
    }

    /// The session on a manual clock: the device's link drops and the device refuses connections for four attempts;
    /// the attempts come at 0, 100, 300 and 700 ms after the loss, the fifth at 1500 ms opens; the configuration is
    /// written again, the listener that was there all along gets samples again, the first with no gap, and the
    /// reconnect is counted with its gap.
    @Test func theSessionReconnectsOnItsClockAndWritesTheConfigurationAgain() async throws {
        let deviceClock = ManualClock(), clock = ManualClock()
        let device = SimulatedWearable(profile: WearableProfile(), clock: deviceClock)
        let wearable = try InProcessWearable(device: device)
        let gate = Gate()
        let session = WearableDeviceSession(peer: "memory:wearable", options: .init(reconnect: ReconnectPolicy()), clock: clock) {
            let refuse = gate.attempt(at: clock.now.offset)
            if refuse { throw TransportError(.connectionRefused, "connection refused") }
            return try wearable.connect()
        }
        let events = await session.events()
        try await session.open()
        let readings = await session.sensorReadings()
        try await session.configureSensors { $0.enable(sensor: .accelerometer, at: ._40ms) }
        try await session.configureGestures { $0.set(gesture: .headNod, enabled: true) }
        var iterator = readings.makeAsyncIterator()
        func pump() async {
            while deviceClock.pendingSleeps == 0 { await Task.yield() }
            deviceClock.advance(by: .milliseconds(40))
        }
        await pump()
        let before = try #require(await iterator.next())

        gate.refuse(4)
        clock.advance(by: .seconds(3))  // the loss at 3 s on the session's clock
        await device.dropLinks()
        // Each refused attempt leaves the session waiting on its clock: advance it to that wait's deadline.
        for _ in 0..<4 {
            while clock.pendingSleeps == 0 { await Task.yield() }
            clock.advance(by: clock.nextDeadline! - clock.now.offset)
        }
        var seen: [WearableEvent] = []
        for await e in events {
            seen.append(e)
            if case .didReconnect = e { break }
        }
        // The first open at 0, then the reconnect's attempts.
        #expect(gate.times == [.zero, .seconds(3), .milliseconds(3100), .milliseconds(3300), .milliseconds(3700), .milliseconds(4500)],
                "attempt times \(gate.times)")
        let lostAt = seen.firstIndex { if case .didLoseLink = $0 { true } else { false } }
        let backAt = seen.firstIndex { if case .didReconnect = $0 { true } else { false } }
        #expect(lostAt != nil && backAt != nil && lostAt! < backAt!)
        #expect(seen.last == .didReconnect(gap: .milliseconds(1500), attempts: 5))
        #expect(!seen.contains { if case .didClose = $0 { true } else { false } })
        // Written again: the device's new link has the accelerometer at 40 ms and the nod.
        #expect(await session.sensorConfiguration?.enabledSensors == [.accelerometer])
        #expect(await session.gestureConfiguration?.enabledGestures == [.headNod])
        #expect(device.linkConfigurations.last?.enabledSensors == [.accelerometer])
        await pump()
        let after = try #require(await iterator.next())
        #expect(after.sensor == .accelerometer && after.missingBefore == 0 && after.deviceTime > before.deviceTime)
        let stats = await session.statistics
        #expect(stats.reconnects == 1 && stats.linkDownTime == .milliseconds(1500))
        #expect(stats[.accelerometer].gaps == 0)
        await session.close()
        #expect(await iterator.next() == nil)
        await wearable.server.shutdown()
    }

    /// Close while waiting between attempts: no more attempts, the listeners end, `didClose(nil)`; with a limit, the
    /// session gives up with a disconnected error once it has passed.
    @Test func closeStopsTheAttemptsAndALimitGivesUp() async throws {
        let clock = ManualClock()
        let device = SimulatedWearable(profile: WearableProfile(), clock: ManualClock())
        let wearable = try InProcessWearable(device: device)
        for limit in [nil, Duration.milliseconds(250)] {
            let gate = Gate()
            let session = WearableDeviceSession(peer: "memory:wearable", options: .init(reconnect: ReconnectPolicy(giveUpAfter: limit)),
                                                clock: clock) {
                if gate.attempt(at: clock.now.offset) { throw TransportError(.connectionRefused, "connection refused") }
                return try wearable.connect()
            }
            let events = await session.events()
            try await session.open()
            let readings = await session.sensorReadings()
            gate.refuse(100)
            await device.dropLinks()
            while clock.pendingSleeps == 0 { await Task.yield() }
            if limit == nil {
                await session.close()
            } else {
                for _ in 0..<2 {
                    while clock.pendingSleeps == 0 { await Task.yield() }
                    clock.advance(by: clock.nextDeadline! - clock.now.offset)
                }
            }
            for await _ in readings {}
            var closed: WearableEvent?
            for await e in events { if case .didClose = e { closed = e; break } }
            let attempts = gate.times.count - 1  // after the first open
            if limit == nil {
                #expect(closed == .didClose(nil) && attempts == 1)
            } else {
                guard case let .didClose(error?)? = closed else { Issue.record("\(String(describing: closed))"); continue }
                #expect(error.code == .disconnected && error.message.contains("not back within"), "\(error.message)")
                #expect(attempts == 3)
            }
            #expect(await session.isReconnecting == false)
            #expect(await session.isOpen == false)
        }
        await wearable.server.shutdown()
    }
}

/// Refuses the next `n` connection attempts and notes the time of each.
final class Gate: Sendable {
    private let state = Mutex<(refusals: Int, times: [Duration])>((0, []))
    func refuse(_ n: Int) { state.withLock { $0.refusals = n } }
    /// Notes an attempt; true: refuse it.
    func attempt(at time: Duration) -> Bool {
        state.withLock { s in
            s.times.append(time)
            guard s.refusals > 0 else { return false }
            s.refusals -= 1
            return true
        }
    }
    var times: [Duration] { state.withLock { $0.times } }
}
