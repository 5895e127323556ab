import Firmware
import Foundation
import Headset
import LightX
import Testing
@testable import FirmwareUpdate

/// What `tuneup flash`, `bootloader` and `firmware read` report and do, made by the library (issue 31 §1).
@Suite struct UpdateReportsTests {
    static let result = UpdateResult(
        image: "app.img", region: .application, previousVersion: "1.4.2", newVersion: "1.5.0", imageBytes: 4096, sectors: 1,
        skippedSectors: 0, bytesWritten: 4096, seconds: 1.5, transferSeconds: 1.25, bytesPerSecond: 2048, maxWindow: 8, resent: 2,
        redoneSectors: 0, reconnects: 1)

    @Test func anUpdatesTextAndItsResultEvent() throws {
        #expect(Self.result.text == """
            Updated.
            Image    app.img (4096 bytes, 1 sectors, app region)
            Version  1.4.2 → 1.5.0
            Written  4096 bytes in 1.25 s (2.0 KiB/s)
            Total    1.50 s, window up to 8, 2 resent, 1 reconnects
            """)
        var already = Self.result
        already.alreadyInstalled = true
        #expect(already.text == "Already installed: the device runs 1.5.0; nothing was written (--force flashes it again).")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(Self.result.resultEvent), as: UTF8.self)
        #expect(json.hasPrefix("{\"alreadyInstalled\":false,") && json.hasSuffix(",\"type\":\"result\"}"))
    }

    @Test func whatAnInterruptedUpdateLeavesByPhase() {
        #expect(UpdateInterruption.message("stopped by SIGINT", during: nil) == "stopped by SIGINT before the update began; the device is unchanged")
        #expect(UpdateInterruption.message("stopped", during: .write)
            == "stopped during write; the device is in its bootloader with a partial image: run the same command again to resume")
        #expect(UpdateInterruption.message("stopped", during: .confirm).contains("after the new image was committed"))
        #expect(UpdateInterruption.errorCode(UpdateError(.verifyFailed, "x")) == "verify-failed")
        #expect(UpdateInterruption.errorCode(CancellationError()) == nil)
    }

    @Test func readBackTakesTheDeviceBackToItsApplicationAndSaysSo() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("app-1.5.0.img")
        _ = try await update(device, image)
        let client = BootloaderClient(sessionOptions: checkSession, wait: .seconds(10)) { await device.connect() }
        let read = try await client.readBack(.application, length: nil, stay: false, file: "out.img")
        #expect(read.bytes == image.bytes)
        #expect(read.report.returnedToApplication && read.report.bytes == image.bytes.count)
        #expect(read.report.text == "Read \(image.bytes.count) bytes of the app region into out.img (CRC-32/JAMCRC \(read.report.crc))")
        let status = try await client.status()
        #expect(status.mode == "application" && status.text.hasPrefix("Mode           application\nAuthenticated  "))
        let stayed = try await client.readBack(.application, length: 256, stay: true, file: "head.img")
        #expect(stayed.bytes == Array(image.bytes.prefix(256)) && !stayed.report.returnedToApplication)
        #expect(try await client.status().text.contains("Bootloader"))
        await client.close()
        await device.shutdown()
    }
}
