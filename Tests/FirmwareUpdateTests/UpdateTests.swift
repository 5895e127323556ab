import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import HeadsetSimulator
import Testing
import Transport

@Suite struct UpdateTests {
    @Test(arguments: ["app-1.5.0.img", "app-2.0.0.img", "app-1.4.3-small.img", "app-1.3.0.img"])
    func everySampleApplicationImageInstallsInMemory(name: String) async throws {
        let device = try await makeDevice()
        let image = try sampleImage(name)
        var options = testOptions()
        options.allowDowngrade = true
        let (result, events) = try await update(device, image, options: options)
        let expected = try #require(image.version)
        #expect(result.newVersion == "\(expected.major).\(expected.minor).\(expected.revision)")
        let running = try await runningVersion(device)
        #expect(running == FirmwareVersion(expected.major, expected.minor, UInt8(expected.revision)))
        // The application region holds exactly the image.
        let flash = await device.flashContents(of: .application)
        #expect(Array(flash.prefix(image.bytes.count)) == image.bytes)
        // Progress: phases in order, fraction never going back, ending at 1.
        let fractions = events.map(\.fraction)
        #expect(zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 }, "progress went backwards")
        #expect(events.last?.phase == .done && events.last?.fraction == 1)
        let order = UpdatePhase.allCases
        let phases = events.map(\.phase)
        #expect(zip(phases, phases.dropFirst()).allSatisfy { order.firstIndex(of: $0)! <= order.firstIndex(of: $1)! })
        await device.shutdown()
    }

    @Test func newFirmwareChangesWhatTheDeviceReports() async throws {
        let device = try await makeDevice()
        _ = try await update(device, try sampleImage("app-2.0.0.img"))
        let headset = Headset(session: LightXSession(transport: await device.connect(), options: checkSession))
        let info = try await headset.graphicEQInfo()
        #expect(info.bandCount == 8)
        let snapshot = try await headset.snapshot()
        #expect(snapshot.firmwareVersion == "2.0.0")
        await headset.close()
        await device.shutdown()
    }

    @Test func resourceImageInstalls() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("resource-1.0.0.img")
        let (result, _) = try await update(device, image)
        #expect(result.region == .resource)
        let flash = await device.flashContents(of: .resource)
        #expect(Array(flash.prefix(image.bytes.count)) == image.bytes)
        #expect(try await runningVersion(device) == FirmwareVersion(1, 4, 2), "the application keeps running")
        await device.shutdown()
    }

    static let allImages = ["app-1.5.0.img", "app-2.0.0.img", "app-1.4.3-small.img", "app-1.3.0.img", "resource-1.0.0.img"]

    /// Installs `name` on a fresh simulator reached through `open`, then checks the version the device reports.
    func installOverALink(_ name: String, server: SimulatorServer, open: @escaping @Sendable () async throws -> any Transport) async throws {
        let image = try sampleImage(name)
        var options = testOptions()
        options.allowDowngrade = true
        let updater = FirmwareUpdater(image: image, options: options, sessionOptions: fastSession, connect: open)
        let result = try await updater.run()
        #expect(result.region == image.region)
        // Let the device see the updater's link go before the next client opens: a pty cannot tell two clients
        // apart, so a request sent in that gap can land in the old session and is lost (it then cost a whole
        // 10 s check timeout, intermittently).
        try await waitUntil("the device saw the updater leave") { await server.devices[0].connectedHosts == 0 }
        let headset = Headset(session: LightXSession(transport: try await open(), options: checkSession))
        let running = try await headset.firmwareVersion()
        await headset.close()
        if image.region == .application, let v = image.version {
            #expect(running == FirmwareVersion(v.major, v.minor, UInt8(v.revision)), "\(name)")
        } else {
            #expect(running == FirmwareVersion(1, 4, 2), "\(name): the application keeps running")
        }
        if image.region == .application { #expect(result.maxWindow > 1, "a Tuneup bootloader is pipelined") }
        await server.shutdown()
    }

    @Test(arguments: allImages)
    func overTCP(name: String) async throws {
        let server = try await SimulatorServer.listenTCP(count: 1, statePath: nil, options: SimulatorOptions(timeScale: 0))
        guard case let .tcp(host, port) = try DeviceAddress(parsing: server.endpoints[0]) else { Issue.record("no TCP endpoint"); return }
        try await installOverALink(name, server: server) { try await TCPTransport.connect(host: host, port: port) }
    }

    @Test(arguments: allImages)
    func overAPseudoTerminal(name: String) async throws {
        let server = try await SimulatorServer.listenPTY(count: 1, statePath: nil, options: SimulatorOptions(timeScale: 0))
        let path = String(server.endpoints[0].dropFirst("serial:".count))
        try await installOverALink(name, server: server) { try await SerialTransport.open(path: path) }
    }

    @Test func windowOneIsStopAndWait() async throws {
        let device = try await makeDevice()
        // A long timeout: a reply that is merely slow (a loaded machine) must not count as lost, which would
        // legitimately redo a sector and make the counters below dip.
        var options = testOptions(window: 1)
        options.requestTimeout = .seconds(10)
        let (result, events) = try await update(device, try sampleImage("app-1.4.3-small.img"), options: options)
        #expect(result.maxWindow == 1)
        // The vendor's order: every erase is acknowledged before the first write.
        let transfer = events.filter { $0.phase == .erase || $0.phase == .write }
        let firstWrite = try #require(transfer.firstIndex { $0.phase == .write })
        #expect(transfer[firstWrite].sectorsErased == transfer[firstWrite].sectorsTotal)
        await device.shutdown()
    }

    @Test func flashingTheSameImageAgainSkipsEverything() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("app-1.5.0.img")
        _ = try await update(device, image)
        let before = await device.flashStatistics
        let (again, _) = try await update(device, image)
        #expect(again.skippedSectors == again.sectors)
        #expect(again.bytesWritten == 0)
        let after = await device.flashStatistics
        #expect(after.erases == before.erases, "nothing erased")
        await device.shutdown()
    }
}

@Suite struct RefusalTests {
    func expectRefusal(_ code: UpdateError.Code, image: String, options: UpdateOptions = testOptions(),
                       sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let device = try await makeDevice()
        let before = await device.flashContents(0..<(2 << 20))
        let operations = await device.flashStatistics.operations
        do {
            _ = try await update(device, try sampleImage(image), options: options)
            Issue.record("\(image) was flashed", sourceLocation: sourceLocation)
        } catch let error as UpdateError {
            #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
            #expect(!error.message.isEmpty && !error.message.contains("\n"), sourceLocation: sourceLocation)
        }
        #expect(await device.flashStatistics.operations == operations, "no flash operation", sourceLocation: sourceLocation)
        #expect(await device.flashContents(0..<(2 << 20)) == before, "flash unchanged", sourceLocation: sourceLocation)
        #expect(await device.runningImage == .application, sourceLocation: sourceLocation)
        await device.shutdown()
    }

    @Test func wrongModel() async throws { try await expectRefusal(.wrongModel, image: "broken-other-model.img") }

    @Test func downgrade() async throws { try await expectRefusal(.downgrade, image: "app-1.3.0.img") }

    @Test func badHash() async throws { try await expectRefusal(.badSignature, image: "broken-bad-hash.img") }

    @Test func signatureChecksWithAKey() async throws {
        var options = testOptions()
        options.verificationKey = try VerificationKey.load(path: imagesDirectory + "/dev-public.pem")
        try await expectRefusal(.badSignature, image: "broken-bad-signature.img", options: options)
        try await expectRefusal(.badSignature, image: "broken-other-key.img", options: options)
        try await expectRefusal(.unsigned, image: "broken-unsigned.img", options: options)
    }

    @Test func tooLargeIsRefusedWhenLoading() throws {
        #expect(throws: ImageError.self) { try sampleImage("broken-too-large.img") }
    }

    @Test func bootWritesBeforeAuthenticationAreRefusedByTheDevice() async throws {
        let device = try await makeDevice()
        let headset = Headset(session: LightXSession(transport: await device.connect(), options: checkSession))
        // Straight into the bootloader's commands without authenticating: the device refuses.
        let jump = try await headset.session.request(BootRequests.jumpToBootloader())
        #expect(jump.status == .fail)
        #expect(await device.runningImage == .application)
        await headset.close()
        await device.shutdown()
    }

    @Test func secureBootDeviceRefusesAnImageSignedByAnotherKey() async throws {
        let key = try VerificationKey.load(path: imagesDirectory + "/dev-public.pem")
        let device = try await makeDevice(SimulatorOptions(timeScale: 0, secureBootKey: key))
        do {
            _ = try await update(device, try sampleImage("broken-other-key.img"))
            Issue.record("the device committed an image signed by another key")
        } catch let error as UpdateError {
            // Refused from the device's capabilities before anything is erased (it used to be the commit that failed).
            #expect(error.code == .badSignature, "\(error.message)")
        }
        // Not bricked: a correctly signed image installs.
        let (result, _) = try await update(device, try sampleImage("app-1.5.0.img"))
        #expect(result.newVersion == "1.5.0")
        await device.shutdown()
    }
}
