import Firmware
import FirmwareUpdate
import Headset
@testable import HeadsetSimulator
import LightX
import Synchronization
import Testing
import Transport

extension SimulatedHeadset {
    /// Clears every bit of the byte at `address` behind the bootloader's back (a flash cell gone bad after it was
    /// programmed and acknowledged): only a CRC verification over that byte can notice.
    func spoilFlash(at address: Int) {
        _ = machine.flash.program(at: address, [0x00])
    }
}

/// A link that, just before the first CRC verification (BootVerifyCRC 0x2C) sent after a flash write, spoils one
/// byte of the device's flash: the transfer acknowledged every block, and what the device holds differs anyway.
final class SpoilsBeforeFinalVerify: Transport {
    let inner: any Transport
    let device: SimulatedHeadset
    let address: Int
    /// Whether a write went out, and whether the flash was spoiled (once per test, across reconnects).
    final class State: Sendable {
        let value = Mutex((wrote: false, spoiled: false))
        var spoiled: Bool { value.withLock { $0.spoiled } }
    }
    let state: State
    init(_ inner: any Transport, device: SimulatedHeadset, address: Int, state: State) {
        (self.inner, self.device, self.address, self.state) = (inner, device, address, state)
    }
    var peerDescription: String { inner.peerDescription }
    var framing: LinkFraming { inner.framing }
    func send(_ bytes: [UInt8]) async throws {
        // An SPP frame: ff 5a, length, then the header; the command is byte 13.
        if bytes.count > 13, bytes[0] == 0xFF, bytes[1] == 0x5A {
            let command = bytes[13]
            if command == Command.bootWriteImage.rawValue { state.value.withLock { $0.wrote = true } }
            if command == Command.bootVerifyCRC.rawValue,
               state.value.withLock({ s in defer { if s.wrote { s.spoiled = true } }; return s.wrote && !s.spoiled }) {
                await device.spoilFlash(at: address)
            }
        }
        try await inner.send(bytes)
    }
    func receive() async throws -> [UInt8] { try await inner.receive() }
    func close() async { await inner.close() }
}

@Suite struct FinalVerifyTests {
    /// issue 31 §5: the final verification covers every sector of the image, the last one too. A byte of the last
    /// sector that differs after the transfer is found there and repaired (not left to the commit, which refuses to
    /// commit an application that does not match: a final verification skipping the last sector failed the update
    /// with `verifyFailed` here).
    @Test func aBadLastSectorIsFoundByTheFinalVerificationAndRepaired() async throws {
        let image = try sampleImage("app-1.4.3-small.img")
        let sectors = FlashRegion.sectorCount(forLength: image.bytes.count)
        #expect(sectors >= 2)
        let start = FlashMap.range(of: .application).lowerBound
        // A byte of the last sector that clearing its bits changes.
        let lastSector = (sectors - 1) * FlashRegion.sectorSize..<image.bytes.count
        let offset = try #require(lastSector.last(where: { image.bytes[$0] != 0 }))
        let device = try await makeDevice()
        let state = SpoilsBeforeFinalVerify.State()
        let (result, _) = try await update(device, image) {
            SpoilsBeforeFinalVerify(await device.connect(), device: device, address: start + offset, state: state)
        }
        #expect(state.spoiled, "the flash was spoiled before the final verification")
        #expect(result.newVersion == "1.4.3")
        let flash = await device.flashContents(of: .application)
        #expect(Array(flash.prefix(image.bytes.count)) == image.bytes)
        await device.shutdown()
    }

    /// issue 31 §5 (planted: the bisection stopping one step early): after a mismatch the updater finds the first bad
    /// sector exactly and resumes from it: the sectors before it are kept (counted as skipped), none after it is.
    @Test(arguments: [0, 1, 2, 19, 20, 21, 38, 39, 40])
    func aMismatchResumesFromExactlyTheFirstBadSector(sector: Int) async throws {
        let image = try sampleImage("app-1.5.0.img")
        let sectors = FlashRegion.sectorCount(forLength: image.bytes.count)
        try #require(sector < sectors)
        let inSector = (sector * FlashRegion.sectorSize)..<min(image.bytes.count, (sector + 1) * FlashRegion.sectorSize)
        let offset = try #require(inSector.first(where: { image.bytes[$0] != 0 }))
        let device = try await makeDevice()
        let state = SpoilsBeforeFinalVerify.State()
        let (result, _) = try await update(device, image) {
            SpoilsBeforeFinalVerify(await device.connect(), device: device, address: FlashMap.range(of: .application).lowerBound + offset,
                                    state: state)
        }
        #expect(state.spoiled)
        #expect(result.newVersion == "1.5.0")
        #expect(result.skippedSectors == sector, "sector \(sector) of \(sectors) was spoiled; resumed after \(result.skippedSectors)")
        let flash = await device.flashContents(of: .application)
        #expect(Array(flash.prefix(image.bytes.count)) == image.bytes)
        await device.shutdown()
    }

    /// issue 31 §5 (planted: `maxRepairs` counted one short): `maxRepairs: 1` allows one repair; `maxRepairs: 0`
    /// none, and the mismatch ends the update with `verifyFailed`.
    @Test func maxRepairsIsTheNumberOfRepairsAllowed() async throws {
        let image = try sampleImage("app-1.4.3-small.img")
        let offset = try #require(image.bytes.indices.first(where: { image.bytes[$0] != 0 }))
        for allowed in [1, 0] {
            let device = try await makeDevice()
            let state = SpoilsBeforeFinalVerify.State()
            var options = testOptions()
            options.maxRepairs = allowed
            do {
                let (result, _) = try await update(device, image, options: options) {
                    SpoilsBeforeFinalVerify(await device.connect(), device: device,
                                            address: FlashMap.range(of: .application).lowerBound + offset, state: state)
                }
                #expect(allowed == 1 && result.newVersion == "1.4.3", "maxRepairs \(allowed): \(result)")
            } catch let error as UpdateError {
                #expect(allowed == 0 && error.code == .verifyFailed, "maxRepairs \(allowed): \(error)")
            }
            #expect(state.spoiled)
            await device.shutdown()
        }
    }
}
