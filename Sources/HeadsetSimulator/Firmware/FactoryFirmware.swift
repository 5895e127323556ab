import Firmware
import LightX

/// What a fresh simulated headset's flash holds: a bootloader, the signed factory application (version 1.4.2,
/// model TS-1, the factory manifest) in the application region, and its commit record; boot data otherwise and the
/// resource region erased.
public enum FactoryFirmware {
    /// The factory application's payload size.
    public static let payloadSize = 64 * 1024
    /// The filler seed of the factory payload (fixed, so every simulator has the same factory image).
    public static let payloadSeed: UInt64 = 0x0001_0004_0002
    /// The factory application's version.
    public static let version = ImageVersion(major: 1, minor: 4, revision: 2)
    /// The bootloader's version (version file 0x000000).
    public static let bootloaderVersion = "1.0.0"

    /// The factory application image: `AppManifest.factory` built into a 64 KiB payload, signed with the
    /// development key (`DevelopmentKeys.testOnlySigningKey`), for region app and model TS-1.
    public static let image: MCUbootImage = MCUbootImage.sign(
        payload: AppManifest.buildPayload(.factory, size: payloadSize, seed: payloadSeed), version: version,
        model: "TS-1", region: .application, key: DevelopmentKeys.testOnlySigningKey)

    /// The whole factory flash (`FlashMap.size` bytes).
    public static let flashContents: [UInt8] = {
        var flash = [UInt8](repeating: 0xFF, count: FlashMap.size)
        let banner = Array("TUNEUP SIMULATED BOOTLOADER \(bootloaderVersion)".utf8) + [0]
        flash.replaceSubrange(0..<banner.count, with: banner)
        let app = image.bytes
        let base = FlashMap.application.lowerBound
        flash.replaceSubrange(base..<(base + app.count), with: app)
        let sectors = FlashRegion.sectorCount(forLength: app.count)
        let crc = CRC32JAMCRC.checksum(flash[base..<(base + sectors * FlashMap.sectorSize)])
        let record = CommitRecord(sequence: 1, sectors: UInt32(sectors), crc: crc, version: version).encoded
        let log = CommitLog.address(ofSlot: 0)
        flash.replaceSubrange(log..<(log + record.count), with: record)
        return flash
    }()
}
