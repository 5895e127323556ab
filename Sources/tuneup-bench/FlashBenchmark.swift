import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import HeadsetSimulator
import Transport

/// Flashes a 512 KiB image onto a simulated headset with the default flash timing, over the link conditioner set
/// to an SPP-like link, once pipelined and once with --window 1, and computes the bound
/// max(link time of all transfer frames, device busy time of all erases and programs).
struct FlashBenchmark {
    var bitsPerSecond = 700_000
    var roundTrip: Duration = .milliseconds(30)
    var imageBytes = 512 * 1024
    var skipWindowOne = false

    struct Run {
        var window: Int?
        var result: UpdateResult
        /// Device busy time of erases and programs during this run.
        var deviceBusy: Double
        var wall: Double
    }

    struct Report {
        var image: FirmwareImage
        var pipelined: Run
        var windowOne: Run?
        var linkSeconds: Double
        var deviceSeconds: Double
        var bound: Double { max(linkSeconds, deviceSeconds) }
    }

    /// A signed application image of `imageBytes` bytes (payload: the 1.5.0 manifest and deterministic filler).
    func makeImage() throws -> FirmwareImage {
        var manifest = AppManifest.factory
        manifest.version = "1.5.0"
        let overhead = 0x200 + 256
        let payload = AppManifest.buildPayload(manifest, size: imageBytes - overhead, seed: 0xBE4C)
        let signed = MCUbootImage.sign(payload: payload, version: ImageVersion(major: 1, minor: 5, revision: 0),
                                       model: manifest.model, region: .application, key: DevelopmentKeys.testOnlySigningKey)
        return try FirmwareImage(bytes: signed.bytes, name: "bench-512k.img", region: .application)
    }

    func conditions() -> LinkConditions {
        LinkConditions(bitsPerSecond: bitsPerSecond, latency: roundTrip / 2)
    }

    func run(_ image: FirmwareImage, window: Int?) async throws -> Run {
        let device = try await SimulatedHeadset(statePath: nil, options: SimulatorOptions(timeScale: 1))
        let link = conditions()
        let before = await device.flashStatistics
        let updater = FirmwareUpdater(image: image, options: UpdateOptions(window: window, resume: false)) {
            ConditionedTransport(wrapping: await device.connect(), conditions: link)
        }
        let start = ContinuousClock.now
        let result = try await updater.run()
        let wall = (ContinuousClock.now - start).seconds
        let after = await device.flashStatistics
        await device.shutdown()
        let busy = (after.eraseTime - before.eraseTime) + (after.programTime - before.programTime)
        return Run(window: window, result: result, deviceBusy: busy.seconds, wall: wall)
    }

    func run(progress: (String) -> Void) async throws -> Report {
        let image = try makeImage()
        // The link side of the bound: every erase and write frame, and their acknowledgements, in their directions.
        let sectors = FlashRegion.sectorCount(forLength: image.bytes.count)
        let blocks = (image.bytes.count + FlashRegion.blockSize - 1) / FlashRegion.blockSize
        let requestBytes = sectors * (SPPFraming.overhead + 4) + blocks * (SPPFraming.overhead + FlashRegion.blockSize)
        let replyBytes = (sectors + blocks) * SPPFraming.overhead
        let linkSeconds = Double(max(requestBytes, replyBytes) * 8) / Double(bitsPerSecond)

        progress("pipelined ...")
        let pipelined = try await run(image, window: nil)
        var windowOne: Run?
        if !skipWindowOne {
            progress("--window 1 (about a minute and a half) ...")
            windowOne = try await run(image, window: 1)
        }
        return Report(image: image, pipelined: pipelined, windowOne: windowOne, linkSeconds: linkSeconds, deviceSeconds: pipelined.deviceBusy)
    }
}

extension Duration {
    static func / (lhs: Duration, rhs: Int) -> Duration { lhs * (1.0 / Double(rhs)) }
}
