import LightX
import Testing
import TestSupport
import Transport
@testable import HeadsetSimulator

/// Waits inside the simulator end promptly when cancelled.
@Suite struct CancellationTests {
    // Each wait here would last hours if the cancellation did not end it: the test's time limit (a hang guard, not
    // a performance bound) tells a wait that ends when cancelled from one that lasts its course, whatever the load.

    /// A reply waiting out its delay (the `.slow` profile's) is not sent when the link's task is cancelled — as a
    /// server shutting down does —: the drain ends at once (the writer used to sleep through the cancellation).
    @Test func aCancelledDrainDoesNotWaitOutTheReplyDelay() async throws {
        try await withTimeLimit {
            let (client, served) = InMemoryTransport.pair()
            let host = HostLink(link: served, replyDelay: .seconds(3600))
            let after = Counter()
            host.reply([1, 2, 3]) { after.increment() }
            host.finish()
            let draining = Task { await host.drainAndClose() }
            draining.cancel()
            await draining.value
            #expect(after.count == 1, "a reply that is not sent still runs its `after`")
            await #expect(throws: TransportError.self) { _ = try await client.receive() }
        }
    }

    /// While the device is off, `waitUntilReady` sleeps until the power-up (no polling); cancelled, it returns at once.
    @Test func aCancelledWaitForReadinessReturnsAtOnce() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 100_000))
            await device.powerCut()  // off for 8 h, then NotReady for 40 h
            let waiting = Task { await device.waitUntilReady(timeout: .seconds(360_000)) }
            try await waitUntil("the wait is pending") { await device.readinessWaiters.count == 1 }
            waiting.cancel()
            let ready = await waiting.value
            #expect(!ready)
            #expect(await device.readinessWaiters.isEmpty)
            await device.shutdown()
        }
    }

    @Test func waitingForReadinessFollowsThePowerUpAndTheReadyDelay() async throws {
        try await withTimeLimit {
            // Off for 6 ms, then NotReady for 30 ms.
            let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 0.02))
            await device.powerCut()
            #expect(await device.waitUntilReady(timeout: .seconds(20)))
            #expect(await device.isReady)
            let slow = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 100))
            await slow.powerCut()
            #expect(await slow.waitUntilReady(timeout: .milliseconds(50)) == false, "still off after 50 ms")
            let waiting = Task { await slow.waitUntilReady(timeout: .seconds(300)) }
            try await waitUntil("the wait is pending") { await slow.readinessWaiters.count == 1 }
            await slow.shutdown()
            #expect(await waiting.value == false, "a shutdown ends the wait")
            await device.shutdown()
        }
    }

    /// In the application a full request queue stops reading the link until there is room; cancelling the task that
    /// serves the link ends that wait at once (it used to last until the device had processed a request).
    @Test func aCancelledLinkWaitingForRoomInTheQueueEndsAtOnce() async throws {
        try await withTimeLimit {
            // Booting the application reads it at 100 B/s: ten minutes of busy time. Q = 1.
            let timing = DeviceTiming(pageProgram: .zero, readBytesPerSecond: 100, readyDelay: .zero, powerUpDelay: .zero)
            let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(
                drainInterval: .zero, timeScale: 1, timing: timing, queueDepth: 1))
            let (client, served) = InMemoryTransport.pair()
            let serving = Task { await device.serve(served) }
            var host = TestHost(client)
            try await host.authenticate()
            #expect(try await host.request(BootRequests.appShutdown()).status == .ok)
            #expect(try await host.request(BootRequests.jumpToBootloader()).status == .ok)
            #expect(try await host.waitForImageType() == true)
            // Rewriting the application's first bytes as they are makes the next boot check the image again.
            let first = await device.flashContents(FlashMap.range(of: .application).lowerBound..<(FlashMap.range(of: .application).lowerBound + 16))
            #expect(try await host.request(try BootRequests.writeBlock(.application, offset: 0, data: first)).status == .ok)
            try await host.send(BootRequests.jumpToApplication())
            try await waitUntil("the application is booting") { await device.runningImage == .application }
            // One request fills the queue; the next waits for room while the device is busy.
            try await host.send(AppSettings.batteryLevel.readRequest())
            try await host.send(AppSettings.batteryLevel.readRequest())
            try await waitUntil("a request waits for room") { await device.roomWaiters.count == 1 }
            serving.cancel()
            await serving.value
            #expect(await device.roomWaiters.isEmpty)
            await device.shutdown()
        }
    }
}
