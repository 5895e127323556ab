import Firmware
import LightX
import Testing
import Transport
@testable import HeadsetSimulator

/// The running device over its links: timing, the request queue, power cuts, reconnects and fault injection.
@Suite struct DeviceLinkTests {
    static let instant = SimulatorOptions(drainInterval: .zero, timeScale: 0)

    func device(_ options: SimulatorOptions = instant) async throws -> SimulatedHeadset {
        try await SimulatedHeadset(statePath: nil, options: options)
    }

    /// Authenticates and jumps to the bootloader, waiting until it answers.
    func enterBootloader(_ host: inout TestHost) async throws {
        try await host.authenticate()
        #expect(try await host.request(BootRequests.appShutdown()).status == .ok)
        #expect(try await host.request(BootRequests.jumpToBootloader()).status == .ok)
        #expect(try await host.waitForImageType() == true)
    }

    @Test func notReadyDuringTheReadinessDelay() async throws {
        try await withTimeLimit {
            // Hours from the jump until the bootloader answers: the early requests come within it on any machine.
            // (The end of the delay is tested on the device's own time: BootloaderTests.)
            let device = try await device(SimulatorOptions(drainInterval: .zero, timeScale: 10_000))
            var host = TestHost(await device.connect())
            try await host.authenticate()
            #expect(try await host.request(BootRequests.jumpToBootloader()).status == .ok)
            let early = try await host.request(BootRequests.imageType())
            expectReply(early, to: BootRequests.imageType(), .notReady)
            #expect(try await host.request(BootRequests.authStatus()).status == .notReady)
            #expect(await !device.isReady)
            await device.shutdown()
        }
    }

    @Test func flashOperationsTakeTheirTimeAndOverflowIsNotReady() async throws {
        try await withTimeLimit {
            let timing = DeviceTiming(sectorErase: .milliseconds(20), readyDelay: .zero, powerUpDelay: .zero)
            let device = try await device(SimulatorOptions(drainInterval: .zero, timeScale: 1, timing: timing, queueDepth: 32))
            var host = TestHost(await device.connect())
            try await enterBootloader(&host)
            let capabilities = try await host.request(BootRequests.capabilities())
            #expect(Array(capabilities.buffer) == u32(1) + u32(32))
            // 40 addressed erases in one burst: 32 wait in the queue, the rest are refused at once.
            var burst: [UInt8] = []
            for k: UInt32 in 0..<40 {
                burst += SPPFraming.encode(try BootRequests.eraseSector(.application, index: k, addressed: true))
            }
            let start = ContinuousClock.now
            try await host.transport.send(burst)
            var statuses: [UInt32: Status] = [:]
            var order: [Status] = []
            for _ in 0..<40 {
                let reply = try #require(try await host.nextReply())
                statuses[reply.address / 4096] = reply.status
                order.append(reply.status)
            }
            let elapsed = ContinuousClock.now - start
            let refused = statuses.filter { $0.value == .notReady }.keys.sorted()
            #expect(refused == Array(32..<40), "the requests that found the queue full")
            #expect(statuses.filter { $0.value == .ok }.count == 32)
            #expect(Array(order.prefix(8)) == Array(repeating: .notReady, count: 8), "refusals go out at once")
            let stats = await device.flashStatistics
            #expect(stats.erases == 32 && stats.eraseTime == .milliseconds(640))
            // A floor only: a loaded machine may take longer, never less (the modelled time is `eraseTime` above).
            #expect(elapsed >= .milliseconds(620), "32 erases of 20 ms took \(elapsed)")
            await device.shutdown()
        }
    }

    @Test func applicationRequestsAreNeverRefusedForFlowControl() async throws {
        try await withTimeLimit {
            let device = try await device(SimulatorOptions(drainInterval: .zero, timeScale: 0, queueDepth: 4))
            var host = TestHost(await device.connect())
            var burst: [UInt8] = []
            for _ in 0..<50 { burst += SPPFraming.encode(AppSettings.batteryLevel.readRequest()) }
            try await host.transport.send(burst)
            for _ in 0..<50 {
                #expect(try #require(try await host.nextReply()).status == .ok)
            }
            await device.shutdown()
        }
    }

    @Test func aPowerCutDropsEveryLinkAndLosesRAM() async throws {
        try await withTimeLimit {
            let device = try await device()
            var a = TestHost(await device.connect())
            try await enterBootloader(&a)
            #expect(try await a.request(BootRequests.eraseSector(.application, index: 0)).status == .ok)
            // A second link to the same running device sees the same state (a reconnect changes nothing).
            var b = TestHost(await device.connect())
            #expect(try BootRequests.isBootloader(imageTypeReply: try await b.request(BootRequests.imageType()).buffer))
            #expect(Array(try await b.request(BootRequests.authStatus()).buffer) == [1])
            #expect(await device.connectedHosts == 2)

            await device.powerCut()
            #expect(try await a.next(timeout: .seconds(2)) == nil)
            await #expect(throws: TransportError(.closed, "")) { _ = try await a.transport.receive() }
            await #expect(throws: TransportError(.closed, "")) { _ = try await b.transport.receive() }
            // Time scale 0: up again at once, in the bootloader (the application was erased), unauthenticated.
            #expect(await device.powerLossCount == 1)
            #expect(await device.runningImage == .bootloader)
            var c = TestHost(await device.connect())
            #expect(try await c.waitForImageType() == true)
            #expect(Array(try await c.request(BootRequests.authStatus()).buffer) == [0])
            await device.shutdown()
        }
    }

    @Test func thePowerComesBackAfterTheScaledDelay() async throws {
        try await withTimeLimit {
            // Off for 5 s: the connect right after the cut falls inside it even on a slow, loaded machine.
            let timing = DeviceTiming(readyDelay: .milliseconds(100), powerUpDelay: .seconds(5))
            let device = try await device(SimulatorOptions(drainInterval: .zero, timeScale: 1, timing: timing))
            await device.powerCut()
            #expect(await device.runningImage == nil)
            let refused = await device.connect()
            await #expect(throws: TransportError(.closed, "")) { _ = try await refused.receive() }
            #expect(await device.waitUntilReady(timeout: .seconds(40)))  // 5.1 s modelled; the rest is a hang guard
            #expect(await device.runningImage == .application, "the factory application is intact")
            var host = TestHost(await device.connect())
            #expect(try await firmwareVersion(host.request(AppSettings.firmwareVersion.readRequest())) == FirmwareVersion(1, 4, 2))
            await device.reboot()
            #expect(await device.powerLossCount == 2)
            #expect(await device.isPowered, "a reboot has no time off")
            await device.shutdown()
        }
    }

    @Test func anInjectedPowerCutTearsTheOperationAndDropsTheLink() async throws {
        try await withTimeLimit {
            let faults = try FaultPlan(parsing: "cut@3;seed=4")
            let device = try await device(SimulatorOptions(drainInterval: .zero, timeScale: 0, faults: faults))
            var host = TestHost(await device.connect())
            try await enterBootloader(&host)
            #expect(try await host.request(BootRequests.eraseSector(.application, index: 0)).status == .ok)
            #expect(try await host.request(BootRequests.eraseSector(.application, index: 1)).status == .ok)
            try await host.send(try BootRequests.eraseSector(.application, index: 2))
            #expect(try await host.nextReply(timeout: .seconds(2)) == nil, "no reply: the power went")
            let stats = await device.flashStatistics
            #expect(stats.operations == 3 && stats.powerCuts == 1)
            #expect(await device.runningImage == .bootloader)
            let torn = await device.flashContents((FlashMap.application.lowerBound + 8192)..<(FlashMap.application.lowerBound + 12288))
            #expect(torn.contains(0xFF) && torn.contains { $0 != 0xFF }, "a torn erase")
            await device.shutdown()
        }
    }

    @Test func anInjectedFailureAnswersFail() async throws {
        try await withTimeLimit {
            let device = try await device(SimulatorOptions(drainInterval: .zero, timeScale: 0, faults: try FaultPlan(parsing: "fail@1")))
            var host = TestHost(await device.connect())
            try await enterBootloader(&host)
            #expect(try await host.request(BootRequests.eraseSector(.application, index: 0)).status == .fail)
            #expect(try await host.request(BootRequests.eraseSector(.application, index: 0)).status == .ok)
            await device.shutdown()
        }
    }

    @Test func linkFaultsWrapEveryLink() async throws {
        try await withTimeLimit {
            let faults = try FaultPlan(parsing: "link:disconnect=300")
            let device = try await device(SimulatorOptions(drainInterval: .zero, timeScale: 0, faults: faults))
            for _ in 0..<2 {
                var host = TestHost(await device.connect())
                var answered = 0
                for _ in 0..<20 {
                    do {
                        try await host.send(AppSettings.batteryLevel.readRequest())
                    } catch {
                        break
                    }
                    // A closed link ends this at once; a reply that must come gets seconds (a loaded machine is slow).
                    guard let reply = try await host.nextReply(timeout: .seconds(10)) else { break }
                    #expect(reply.status == .ok)
                    answered += 1
                }
                #expect(answered > 0 && answered < 20, "the link went down after 300 bytes (\(answered) answered)")
            }
            #expect(await device.isPowered, "a dropped link is not a power cut")
            await device.shutdown()
        }
    }

    /// Runs `requests` one at a time; returns how many were answered before the link closed (all: `requests.count`).
    func run(_ requests: [Packet], on host: inout TestHost) async throws -> Int {
        for (k, request) in requests.enumerated() {
            do {
                try await host.send(request)
            } catch {
                return k
            }
            // A closed link (the power went) ends this at once; a reply that must come gets seconds.
            guard let reply = try await host.nextReply(timeout: .seconds(10)) else { return k }
            #expect(reply.status == .ok, "request \(k) (\(request.command)): \(reply.status)")
        }
        return requests.count
    }

    @Test func aPowerCutAtEveryFlashOperationOfAnUpdateNeverLeavesAHalfWrittenApplication() async throws {
        // Hundreds of steps: under the parallel suite's load on two cores they take minutes. The limit is a hang guard.
        try await withTimeLimit(300) {
            let image = TestImages.signed(size: 6000)
            let requests = try TestImages.updateRequests(image)
            let factory = FactoryFirmware.image.bytes
            // The uninterrupted update, to count its flash operations.
            let clean = try await device()
            var host = TestHost(await clean.connect())
            try await enterBootloader(&host)
            #expect(try await run(requests, on: &host) == requests.count)
            let operations = await clean.flashStatistics.operations
            #expect(operations == 2 + (image.count + 255) / 256 + 1, "erases, page programs, the commit record")
            await clean.shutdown()

            var outcomes: [RunningImage: Int] = [:]
            for cut in 1...operations {
                let options = SimulatorOptions(drainInterval: .zero, timeScale: 0, faults: FaultPlan(powerCutAt: [cut], seed: UInt64(cut)))
                let device = try await device(options)
                var host = TestHost(await device.connect())
                try await enterBootloader(&host)
                let answered = try await run(requests, on: &host)
                #expect(answered < requests.count, "cut@\(cut) interrupts the update")
                #expect(await device.powerLossCount == 1)
                // It powered up again: into an intact application or the bootloader.
                let image0 = try #require(await device.runningImage, "cut@\(cut): the device powers up")
                outcomes[image0, default: 0] += 1
                if image0 == .application {
                    let app = await device.flashContents(of: .application)
                    let version = await device.state.firmwareVersion
                    let intactOld = version == FirmwareVersion(1, 4, 2) && Array(app.prefix(factory.count)) == factory
                    let intactNew = version == FirmwareVersion(1, 5, 0) && Array(app.prefix(image.count)) == image
                    #expect(intactOld || intactNew, "cut@\(cut): the running application is intact")
                }
                // A re-flash succeeds.
                var again = TestHost(await device.connect())
                if try await again.waitForImageType() == false {
                    try await enterBootloader(&again)
                } else {
                    try await again.authenticate()
                }
                #expect(try await run(requests, on: &again) == requests.count, "cut@\(cut): the re-flash completes")
                #expect(try await again.waitForImageType() == false)
                #expect(try await firmwareVersion(again.request(AppSettings.firmwareVersion.readRequest())) == FirmwareVersion(1, 5, 0))
                await device.shutdown()
            }
            // Every cut lands inside the update, which erases the old application first: the bootloader each time.
            #expect(outcomes == [.bootloader: operations], "outcomes over \(operations) cut points: \(outcomes)")
        }
    }
}
