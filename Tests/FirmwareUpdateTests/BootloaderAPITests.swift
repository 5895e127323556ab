import Firmware
import Headset
import LightX
import Testing
@testable import FirmwareUpdate

/// Headset's typed bootloader API against the simulated device: what the updater speaks instead of packets.
@Suite struct BootloaderAPITests {
    @Test func identifiesReadsBackAndVerifies() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("app-1.5.0.img")
        _ = try await update(device, image)
        let client = BootloaderClient(sessionOptions: checkSession, wait: .seconds(10)) { await device.connect() }
        try await client.enter()
        let bootloader = try await client.link.device().bootloader
        #expect(try await bootloader.imageType() == .bootloader)
        #expect(try await bootloader.isAuthenticated() == true)
        let capabilities = try #require(try await bootloader.capabilities())
        #expect(capabilities.queueDepth > 1 && capabilities.addressedErase)
        #expect(try await bootloader.versionFile(of: .application) == "1.5.0")

        // Pipelined reads of the first sector, several in flight, then the CRC the device computes over it.
        let plan = TransferPlan(region: .application, image: image.bytes)
        var tickets: [BootTicket] = []
        for offset in stride(from: 0, to: FlashRegion.sectorSize, by: FlashRegion.blockSize) {
            tickets.append(try await bootloader.submit(.read(.application, offset: offset, count: FlashRegion.blockSize)))
        }
        var sector: [UInt8] = []
        for ticket in tickets {
            let reply = try #require(try await bootloader.reply(to: ticket))
            #expect(reply.answer.isOK && reply.latency > .zero)
            sector += reply.data
        }
        #expect(sector == Array(plan.padded.prefix(FlashRegion.sectorSize)))
        #expect(try await bootloader.verifyCRC(.application, sectors: 1, crc: plan.crc(ofFirst: 1)).status == .ok)
        #expect(try await bootloader.verifyCRC(.application, sectors: 1, crc: plan.crc(ofFirst: 1) ^ 1).status == .fail)

        // Bad arguments are one-line errors before anything is sent.
        let error = await #expect(throws: HeadsetError.self) {
            _ = try await bootloader.submit(.read(.application, offset: 0, count: 0))
        }
        #expect(error?.code == .invalidArgument && error?.message.contains("1...256") == true)
        await #expect(throws: HeadsetError.self) { _ = try await bootloader.verifyCRC(.application, sectors: -1, crc: 0) }
        await #expect(throws: HeadsetError.self) { _ = try await bootloader.submit(.erase(.application, sector: -3, addressed: true)) }

        let jump = try await bootloader.jumpToApplication()
        #expect(jump.isOK || jump.status == .notReady)
        await client.close()
        await device.shutdown()
    }
}
