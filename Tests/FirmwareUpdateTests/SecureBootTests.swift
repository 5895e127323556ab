import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import HeadsetSimulator
import Testing
import Transport

/// issue 7 item 3: a secure-boot device says in its capabilities which key it accepts and its rollback floor, and
/// the updater refuses what it would not commit before erasing anything, leaving the device running its
/// committed application.
@Suite struct SecureBootTests {
    /// The key the sample images are signed with.
    static func key() throws -> VerificationKey { try VerificationKey.load(path: imagesDirectory + "/dev-public.pem") }

    func secureDevice() async throws -> SimulatedHeadset {
        try await makeDevice(SimulatorOptions(timeScale: 0, secureBootKey: try Self.key()))
    }

    /// Flashing `image` is refused with `code` (and a message naming `mentions`); the application region, the
    /// erase count and the running application are as before, and the device still boots it.
    func expectRefused(_ device: SimulatedHeadset, _ image: FirmwareImage, _ code: UpdateError.Code, mentions: String,
                       options: UpdateOptions = testOptions(), sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let before = await device.flashContents(of: .application)
        let erases = await device.flashStatistics.erases
        let version = try await runningVersion(device)
        do {
            _ = try await update(device, image, options: options)
            Issue.record("\(image.name) was flashed", sourceLocation: sourceLocation)
        } catch let error as UpdateError {
            #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
            #expect(error.message.contains(mentions), "\(error.message)", sourceLocation: sourceLocation)
        }
        #expect(await device.flashStatistics.erases == erases, "nothing erased", sourceLocation: sourceLocation)
        #expect(await device.flashContents(of: .application) == before, "application intact", sourceLocation: sourceLocation)
        #expect(await device.runningImage == .application, "back in the application", sourceLocation: sourceLocation)
        #expect(try await runningVersion(device) == version, sourceLocation: sourceLocation)
        // And it boots it after a power cycle.
        await device.reboot()
        #expect(await device.waitUntilReady())
        #expect(await device.runningImage == .application, "the committed application boots", sourceLocation: sourceLocation)
    }

    @Test func capabilitiesTellTheKeyAndTheFloor() async throws {
        let device = try await secureDevice()
        _ = try await update(device, try sampleImage("app-1.5.0.img"))
        let client = BootloaderClient(sessionOptions: fastSession, wait: .seconds(10)) { await device.connect() }
        try await client.enter()
        let status = try await client.status()
        #expect(status.secureBootKeyHash == Hex.string(try Self.key().keyHash))
        #expect(status.rollbackFloor == "1.5.0")
        await client.close()
        await device.shutdown()
    }

    /// Unsigned, raw, or signed by another key than the device's.
    @Test(arguments: [
        ("broken-unsigned.img", UpdateError.Code.unsigned, "accepts only images signed by key"),
        ("raw-app-1.4.3-small.hex", .unsigned, "raw image"),
        ("broken-other-key.img", .badSignature, "signed by another key"),
    ])
    func imageTheDeviceWouldNotCommitIsRefusedBeforeErasing(name: String, code: UpdateError.Code, mentions: String) async throws {
        let device = try await secureDevice()
        try await expectRefused(device, try sampleImage(name, region: .application), code, mentions: mentions)
        await device.shutdown()
    }

    @Test func downgradeBelowTheFloorIsRefusedEvenWhenAllowed() async throws {
        let device = try await secureDevice()
        _ = try await update(device, try sampleImage("app-2.0.0.img"))
        var options = testOptions()
        options.allowDowngrade = true
        try await expectRefused(device, try sampleImage("app-1.5.0.img"), .downgrade, mentions: "rollback floor 2.0.0", options: options)
        await device.shutdown()
    }

    /// A device without secure boot says nothing and takes what it took before, even an unsigned image.
    @Test func deviceWithoutSecureBootIsUnchanged() async throws {
        let device = try await makeDevice()
        let (result, _) = try await update(device, try sampleImage("broken-unsigned.img"))
        #expect(result.skippedSectors < result.sectors && result.bytesWritten > 0)
        await device.shutdown()
    }
}
