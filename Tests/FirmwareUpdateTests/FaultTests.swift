import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import HeadsetSimulator
import Testing
import Transport

@Suite struct FaultTests {
    /// Cuts power at every flash operation of an update of the small image, in turn. After each cut the device
    /// must power up into the old application or its bootloader, never a half-written application, and a
    /// re-flash must succeed.
    @Test func powerCutAtEveryFlashOperation() async throws {
        let image = try sampleImage("app-1.4.3-small.img")
        // A clean run tells which operations the update performs.
        let probe = try await makeDevice()
        let first = await probe.flashStatistics.operations
        _ = try await update(probe, image)
        let last = await probe.flashStatistics.operations
        await probe.shutdown()
        #expect(last - first > 20)

        var outcomes: [String: Int] = [:]
        for cut in (first + 1)...last {
            let device = try await makeDevice(SimulatorOptions(timeScale: 0, faults: FaultPlan(powerCutAt: [cut], seed: UInt64(cut))))
            // The first updater loses its device at the cut and is not allowed to reconnect: it stops at once, like a
            // killed tool (cancellation ends its reconnect loop). Before the cut it gets the usual patient waits; a
            // short ready wait could end the update before the cut on a loaded machine.
            let cutSeen = Counter()
            do {
                _ = try await update(device, image) {
                    if await device.powerLossCount > 0 { _ = cutSeen.next(); throw CancellationError() }
                    return await device.connect()
                }
            } catch {}
            // An update can take fewer flash operations than the clean run did (a sector the clean run wrote twice
            // after a slow reply, on a loaded machine): a cut past its last operation never happens. Counted, not
            // checked; every cut that happens is.
            if await device.powerLossCount == 0, await device.flashStatistics.operations < cut {
                outcomes["cut not reached", default: 0] += 1
                await device.shutdown()
                continue
            }
            #expect(await device.powerLossCount == 1, "cut \(cut) happened")
            #expect(await device.waitUntilReady(), "cut \(cut): the device powers up")
            switch await device.runningImage {
            case .application:
                let version = try await runningVersion(device)
                #expect(version == FirmwareVersion(1, 4, 2) || version == FirmwareVersion(1, 4, 3), "cut \(cut): runs \(version)")
                if version == FirmwareVersion(1, 4, 3) {
                    let flash = await device.flashContents(of: .application)
                    #expect(Array(flash.prefix(image.bytes.count)) == image.bytes, "cut \(cut): a committed image is complete")
                }
                outcomes["application \(version)", default: 0] += 1
            case .bootloader:
                outcomes["bootloader", default: 0] += 1
            default:
                Issue.record("cut \(cut): the device is neither in its application nor its bootloader")
            }
            // A re-flash succeeds.
            let (result, _) = try await update(device, image)
            #expect(result.newVersion == "1.4.3", "cut \(cut): re-flash")
            await device.shutdown()
        }
        print("power-cut sweep: \(last - first) cut points tried; device after the cut: \(outcomes.sorted { $0.key < $1.key })")
        #expect(outcomes["cut not reached", default: 0] <= 2, "most cut points are reached")
    }

    @Test(arguments: [
        ("corruption", "corrupt=0.0005,seed=1"),
        ("drops", "drop=0.02,seed=2"),
        ("stalls", "stall=0.02:150ms,seed=3"),
        ("everything", "corrupt=0.0002,drop=0.01,stall=0.01:100ms,seed=4"),
    ])
    func completesOverAFaultyLink(name: String, spec: String) async throws {
        let device = try await makeDevice()
        let conditions = try LinkConditions(parsing: spec)
        let image = try sampleImage("app-1.5.0.img")
        // Lost requests are this test's subject: each costs the request timeout, so it is short.
        let (result, _) = try await update(device, image, options: testOptions(requestTimeout: .milliseconds(500))) {
            ConditionedTransport(wrapping: await device.connect(), conditions: conditions)
        }
        #expect(result.newVersion == "1.5.0", "\(name)")
        let flash = await device.flashContents(of: .application)
        #expect(CRC32JAMCRC.checksum(flash.prefix(image.bytes.count)) == CRC32JAMCRC.checksum(image.bytes))
        print("\(name): resent \(result.resent), redone sectors \(result.redoneSectors), reconnects \(result.reconnects)")
    }

    @Test func disconnectMidWriteResumes() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("app-2.0.0.img")
        let links = Counter()
        let (result, _) = try await update(device, image) {
            // The first link breaks after 60 KB; the next ones are fine.
            let link = await device.connect()
            return links.next() == 1 ? ConditionedTransport(wrapping: link, conditions: LinkConditions(disconnectAfterBytes: 60_000)) : link
        }
        #expect(result.newVersion == "2.0.0")
        #expect(result.reconnects >= 1)
        #expect(result.bytesWritten < 2 * image.bytes.count, "resumed rather than starting over")
    }

    @Test func restartedToolResumesFromWhatTheDeviceHolds() async throws {
        let device = try await makeDevice()
        let image = try sampleImage("app-2.0.0.img")
        // The first run's link dies after 100 KB and it cannot reconnect: the tool stops at once, like a killed tool.
        try await abandonedUpdate(device, image, afterBytes: 100_000)
        let (result, _) = try await update(device, image)
        #expect(result.skippedSectors > 0, "resumed after \(result.skippedSectors) sectors")
        #expect(result.newVersion == "2.0.0")
    }

    @Test func failingFlashOperationIsRepaired() async throws {
        let probe = try await makeDevice()
        let first = await probe.flashStatistics.operations
        await probe.shutdown()
        let device = try await makeDevice(SimulatorOptions(timeScale: 0, faults: FaultPlan(failAt: [first + 20, first + 40])))
        let (result, _) = try await update(device, try sampleImage("app-1.5.0.img"))
        #expect(result.newVersion == "1.5.0")
        #expect(result.redoneSectors >= 1)
    }
}
