import Firmware
import Glibc
import LightX
import Testing
import Transport
@testable import HeadsetSimulator
@testable import Simulator

/// Flash and running state across restarts (power cycles) and in-process reopens (a device that stayed on).
@Suite struct FlashPersistenceTests {
    static let instant = SimulatorOptions(drainInterval: .zero, timeScale: 0)
    static var stayedOn: SimulatorOptions {
        var o = instant
        o.powerOn = false
        return o
    }

    /// Authenticates and jumps to the bootloader.
    func enterBootloader(_ host: inout TestHost) async throws {
        try await host.authenticate()
        #expect(try await host.request(BootRequests.jumpToBootloader()).status == .ok)
        #expect(try await host.waitForImageType() == true)
    }

    func runAll(_ requests: [Packet], _ host: inout TestHost) async throws {
        for request in requests {
            let reply = try await host.request(request)
            #expect(reply.status == .ok, "\(request.command): \(reply.status)")
        }
    }

    @Test func flashSurvivesARestartWhichIsAPowerCycle() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/state.json"
        try await withTimeLimit {
            let first = try await SimulatedHeadset(statePath: path, options: Self.instant)
            var host = TestHost(await first.connect())
            try await enterBootloader(&host)
            let image = TestImages.signed()
            let before = try #require(first.store).flashBytesWritten
            try await runAll(try TestImages.updateRequests(image), &host)
            // Acknowledged operations are in the flash file already, each written as the bytes it touched.
            let written = try #require(first.store).flashBytesWritten - before
            #expect(written > 0 && written < 3 * 4096 + image.count + 256, "\(written) bytes written for a \(image.count)-byte update")
            let file = try #require(try FileIO.readFile(path + ".flash"))
            let appInFile = Array(file[(FlashFile.flashOffset(ofDevice: 0) + FlashMap.application.lowerBound)...].prefix(FlashMap.application.count))
            #expect(appInFile == (await first.flashContents(of: .application)))
            await first.shutdown()

            let second = try await SimulatedHeadset(statePath: path, options: Self.instant)
            #expect(await second.runningImage == .application)
            var again = TestHost(await second.connect())
            #expect(try await firmwareVersion(again.request(AppSettings.firmwareVersion.readRequest())) == FirmwareVersion(1, 5, 0))
            #expect(try await GraphicEQRequests.presetNameCodec.decode(again.request(GraphicEQRequests.readPresetName(preset: 0)).buffer) == "Bass")
            // Leave it in the bootloader, half-erased, authenticated.
            try await enterBootloader(&again)
            #expect(try await again.request(BootRequests.eraseSector(.application, index: 1)).status == .ok)
            await second.shutdown()

            let third = try await SimulatedHeadset(statePath: path, options: Self.instant)
            #expect(await third.runningImage == .bootloader, "the application is no longer intact")
            #expect(await !third.isAuthenticated, "a power cycle loses the authentication")
            await third.shutdown()
            // The settings file holds what the application adopted from its manifest.
            let saved = try #require(try await StateStore.read(path: path)?.first)
            #expect(saved.firmwareVersion == FirmwareVersion(1, 5, 0) && saved.graphicEQ.bandCount == 8)
        }
    }

    @Test func anInProcessReopenKeepsTheRunningDevice() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inproc.json"
        try await withTimeLimit {
            let (sectors, crc) = TestImages.sectorsAndCRC(FactoryFirmware.image.bytes)
            let one = try await SimulatorServer.inProcessLink(statePath: path, options: Self.instant)
            var host = TestHost(one)
            try await enterBootloader(&host)
            #expect(try await host.request(BootRequests.verifyCRC(.application, sectors: sectors, crc: crc)).status == .ok)
            await one.close()

            // The next CLI command finds the bootloader, still authenticated, with its verification.
            let two = try await SimulatorServer.inProcessLink(statePath: path, options: Self.instant)
            var h2 = TestHost(two)
            #expect(try BootRequests.isBootloader(imageTypeReply: try await h2.request(BootRequests.imageType()).buffer))
            #expect(Array(try await h2.request(BootRequests.authStatus()).buffer) == [1])
            #expect(try await h2.request(BootRequests.commit(sectors: sectors)).status == .ok, "the verification was kept")
            #expect(try await h2.request(BootRequests.jumpToApplication()).status == .ok)
            await two.close()

            let three = try await SimulatorServer.inProcessLink(statePath: path, options: Self.instant)
            var h3 = TestHost(three)
            #expect(try await h3.waitForImageType() == false)
            #expect(Array(try await h3.request(BootRequests.authStatus()).buffer) == [0], "the jump to the application cleared it")
            await three.close()
        }
    }

    @Test func theReadinessDelayKeepsRunningBetweenProcesses() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/ready.json"
        try await withTimeLimit {
            var options = Self.stayedOn
            options.timeScale = 1
            options.timing = DeviceTiming(readyDelay: .seconds(30))
            let one = try await SimulatorServer.inProcessLink(statePath: path, options: options)
            var host = TestHost(one)
            try await host.authenticate()
            #expect(try await host.request(BootRequests.jumpToBootloader()).status == .ok)
            await one.close()
            let two = try await SimulatorServer.inProcessLink(statePath: path, options: options)
            var h2 = TestHost(two)
            #expect(try await h2.request(BootRequests.imageType()).status == .notReady, "29 s of the delay are left")
            await two.close()
        }
    }

    @Test func aKilledInProcessDeviceDoesNotResumeStaleRAM() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/killed.json"
        try await withTimeLimit {
            let one = try await SimulatorServer.inProcessLink(statePath: path, options: Self.instant)
            var host = TestHost(one)
            try await enterBootloader(&host)
            await one.close()
            // A process opens the device (consuming the stored RAM) and dies without closing it.
            let store = try await StateStore.open(path: path)
            let doomed = SimulatedHeadset(sharedStore: store, index: 0, options: Self.stayedOn)
            #expect(await doomed.runningImage == .bootloader)
            await store.close()
            // The next process evaluates the flash like a power-on: the factory application is intact.
            let next = try await SimulatorServer.inProcessLink(statePath: path, options: Self.instant)
            var h = TestHost(next)
            #expect(try await h.waitForImageType() == false)
            await next.close()
            _ = doomed
        }
    }

    @Test func aVersion1StateFileMigratesWithAFactoryFlash() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/v1.json"
        var old = HeadsetState.factory()
        old.ancEnabled = true
        old.graphicEQ.presets[1].persistedGains[0] = -7
        old.graphicEQ.presets[1].workingGains[0] = -7
        old.firmwareVersion = FirmwareVersion(1, 3, 0)
        old.identity.firmwareVersion = "1.3.0"
        try writeFile(path, String(decoding: try StateStore.encode([old]), as: UTF8.self))
        #expect(try readFile(path).contains("\"version\" : 1"))
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: path, options: Self.instant)
            #expect(await device.runningImage == .application)
            let state = await device.state
            #expect(state.ancEnabled && state.graphicEQ.presets[1].workingGains[0] == -7, "settings kept")
            #expect(state.firmwareVersion == FirmwareVersion(1, 4, 2), "the version comes from the (factory) flash now")
            #expect(await device.flashContents(0..<FlashMap.size) == FactoryFirmware.flashContents)
            await device.shutdown()
            #expect(dir.entries() == ["v1.json", "v1.json.flash", "v1.json.lock"])
            let saved = try #require(try await StateStore.read(path: path)?.first)
            #expect(saved.ancEnabled && saved.identity.firmwareVersion == "1.4.2")
        }
    }

    @Test func aCorruptFlashFileIsAClearErrorAndIsLeftAlone() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/bad.json"
        try writeFile(path + ".flash", "not a flash container, but long enough to have a header? no.")
        try await withTimeLimit {
            await #expect {
                _ = try await SimulatedHeadset(statePath: path, options: Self.instant)
            } throws: { error in
                guard let e = error as? SimulatorError else { return false }
                return e.code == .corruptState && e.message.contains(path + ".flash")
            }
            #expect(try readFile(path + ".flash").hasPrefix("not a flash container"))
            // A wrong header of the full size is refused too.
            try writeFile(path + ".flash", String(repeating: "x", count: FlashFile.headerSize))
            await #expect(throws: SimulatorError(.corruptState, "")) {
                _ = try await SimulatedHeadset(statePath: path, options: Self.instant)
            }
        }
    }

    @Test func devicesOfOneServerKeepSeparateFlash() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/multi.json"
        try await withTimeLimit {
            let store = try await StateStore.open(path: path)
            let a = SimulatedHeadset(sharedStore: store, index: 0, options: Self.instant)
            let b = SimulatedHeadset(sharedStore: store, index: 1, options: Self.instant)
            var host = TestHost(await b.connect())
            try await enterBootloader(&host)
            try await runAll(try TestImages.updateRequests(TestImages.signed()), &host)
            await a.shutdown()
            await b.shutdown()
            await store.close()

            let again = try await StateStore.open(path: path)
            let a2 = SimulatedHeadset(sharedStore: again, index: 0, options: Self.instant)
            let b2 = SimulatedHeadset(sharedStore: again, index: 1, options: Self.instant)
            #expect(await a2.state.firmwareVersion == FirmwareVersion(1, 4, 2))
            #expect(await b2.state.firmwareVersion == FirmwareVersion(1, 5, 0))
            #expect(await b2.state.identity.serialNumber == "TS1-000002")
            await a2.shutdown()
            await b2.shutdown()
            await again.close()
        }
    }

    @Test func serverControlLinesCutPowerAndReboot() async throws {
        try await withTimeLimit {
            let server = try await SimulatorServer.listenTCP(count: 2, statePath: nil, options: Self.instant)
            #expect(try await server.perform(SimulatorControl.parse("power-cut 1")))
            #expect(try await server.perform(SimulatorControl.parse("reboot")))
            #expect(await server.devices[1].powerLossCount == 1)
            #expect(await server.devices[0].powerLossCount == 1)
            #expect(await server.devices[0].runningImage == .application)
            await #expect(throws: SimulatorError(.invalidArgument, "")) {
                try await server.perform(.powerCut(device: 2))
            }
            await server.shutdown()
        }
    }
}
