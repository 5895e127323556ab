import Foundation
import Testing
import LightX
@testable import Firmware

@Suite struct FirmwareImageTests {
    let payload = AppManifest.buildPayload(.factory, size: 6000, seed: 5)

    @Test func mcubootImageTakesItsRegionFromTheTLV() throws {
        let signed = sampleImage(size: 6000)
        let image = try FirmwareImage(bytes: signed.bytes, name: "app.img", region: nil)
        #expect(image.format == .mcuboot)
        #expect(image.region == .application)
        #expect(image.bytes == signed.bytes)
        #expect(image.mcuboot?.version == ImageVersion(major: 1, minor: 5, revision: 0))
        #expect(image.version == ImageVersion(major: 1, minor: 5, revision: 0))
        #expect(image.model == "TS-1")
        #expect(image.manifest?.version == "1.5.0")
        try image.verify(with: DevelopmentKeys.publicKey)
        #expect(try FirmwareImage(bytes: signed.bytes, name: "app.img", region: .application).region == .application)

        let e = imageError { _ = try FirmwareImage(bytes: signed.bytes, name: "app.img", region: .resource) }
        #expect(e?.code == .noRegion)
        #expect(e?.message == "app.img: is an image for the app region, not resource")
    }

    @Test func rawAndHexNeedARegion() throws {
        let e = imageError { _ = try FirmwareImage(bytes: payload, name: "payload.bin", region: nil) }
        #expect(e?.code == .noRegion)
        #expect(e?.message.contains("payload.bin: is a raw image") == true)
        #expect(e?.message.contains("give --region app|resource") == true)

        let raw = try FirmwareImage(bytes: payload, name: "payload.bin", region: .application)
        #expect(raw.format == .raw && raw.mcuboot == nil && raw.bytes == payload)
        #expect(raw.manifest == .factory)
        #expect(raw.version == ImageVersion(major: 1, minor: 4, revision: 2))
        #expect(raw.model == "TS-1")
        try raw.verify(with: nil)
        #expect(imageError { try raw.verify(with: DevelopmentKeys.publicKey) }?.code == .unsigned)

        let hex = Array(IntelHex.encode(payload, base: 0x0004_0000).utf8)
        #expect(imageError { _ = try FirmwareImage(bytes: hex, name: "p.hex", region: nil) }?.message.contains("Intel HEX") == true)
        let fromHex = try FirmwareImage(bytes: hex, name: "p.hex", region: .resource)
        #expect(fromHex.format == .intelHex && fromHex.bytes == payload && fromHex.region == .resource)
        #expect(fromHex.manifest == .factory)

        // An MCUboot image without a region TLV needs one too.
        let noRegion = sampleImage(region: nil)
        #expect(imageError { _ = try FirmwareImage(bytes: noRegion.bytes, name: "n.img", region: nil) }?.code == .noRegion)
        #expect(try FirmwareImage(bytes: noRegion.bytes, name: "n.img", region: .resource).region == .resource)
    }

    @Test func hexCarryingAnMCUbootImage() throws {
        let signed = sampleImage(size: 3000)
        let hex = Array(IntelHex.encode(signed.bytes, base: 0x0004_0000).utf8)
        let image = try FirmwareImage(bytes: hex, name: "signed.hex", region: nil)
        #expect(image.format == .intelHex)
        #expect(image.mcuboot != nil && image.region == .application && image.bytes == signed.bytes)
        try image.verify(with: DevelopmentKeys.publicKey)
        #expect(try ImageFile(bytes: hex, name: "signed.hex").hexBase == 0x0004_0000)
    }

    @Test func sizeLimitsPerRegion() throws {
        let exactlyApp = [UInt8](repeating: 0xA5, count: FlashRegion.application.maxSize)
        #expect(try FirmwareImage(bytes: exactlyApp, name: "max.bin", region: .application).bytes.count == 512 * 1024)
        let e = imageError { _ = try FirmwareImage(bytes: exactlyApp + [0], name: "big.bin", region: .application) }
        #expect(e?.code == .tooLarge)
        #expect(e?.message == "big.bin: 524289 bytes do not fit the app region (524288 bytes)")
        #expect(try FirmwareImage(bytes: exactlyApp + [0], name: "big.bin", region: .resource).region == .resource)
        let overResource = [UInt8](repeating: 0, count: FlashRegion.resource.maxSize + 1)
        #expect(imageError { _ = try FirmwareImage(bytes: overResource, name: "r.bin", region: .resource) }?.code == .tooLarge)
        // A signed image that is too large for the region its TLV names.
        let big = MCUbootImage.sign(payload: [UInt8](repeating: 1, count: 512 * 1024), version: .init(major: 1, minor: 6, revision: 0),
                                    model: "TS-1", region: .application, key: Keys.dev)
        #expect(imageError { _ = try FirmwareImage(bytes: big.bytes, name: "big.img", region: nil) }?.code == .tooLarge)
    }

    @Test func errorsNameTheFile() throws {
        #expect(imageError { _ = try FirmwareImage(bytes: [], name: "empty.bin", region: .application) }?.message == "empty.bin: is empty")
        var broken = sampleImage().bytes
        broken.removeLast(10)
        let e = imageError { _ = try FirmwareImage(bytes: broken, name: "cut.img", region: nil) }
        #expect(e?.code == .truncated)
        #expect(e?.message.hasPrefix("cut.img: ") == true)
        var badHash = sampleImage().bytes
        badHash[0x300] ^= 1
        let image = try FirmwareImage(bytes: badHash, name: "bad.img", region: nil)
        let v = imageError { try image.verify(with: nil) }
        #expect(v?.code == .badHash)
        #expect(v?.message.hasPrefix("bad.img: SHA-256 mismatch") == true)
        #expect(imageError { _ = try FirmwareImage(bytes: Array(":zz\n".utf8), name: "x.hex", region: .application) }?.message.hasPrefix("x.hex: Intel HEX line 1") == true)
    }

    @Test func loadReadsFiles() throws {
        let dir = try TempDir()
        let path = try dir.write("app.img", sampleImage(size: 5000).bytes)
        let image = try FirmwareImage.load(path: path)
        #expect(image.name == path && image.region == .application)
        let missing = imageError { _ = try FirmwareImage.load(path: dir.file("nope.img")) }
        #expect(missing?.code == .io)
        #expect(missing?.message == "\(dir.file("nope.img")): cannot read: No such file or directory")
        #expect(imageError { _ = try FirmwareImage.load(path: dir.path) }?.code == .io)
    }

    @Test func flashCRCCoversErasedPadding() throws {
        let image = try FirmwareImage(bytes: [1, 2, 3], name: "t", region: .application)
        #expect(image.sectorCount == 1)
        #expect(image.flashCRC == CRC32JAMCRC.checksum([1, 2, 3] + [UInt8](repeating: 0xFF, count: 4093)))
        let exact = try FirmwareImage(bytes: [UInt8](repeating: 7, count: 8192), name: "t", region: .application)
        #expect(exact.sectorCount == 2)
        #expect(exact.flashCRC == CRC32JAMCRC.checksum([UInt8](repeating: 7, count: 8192)))
    }

    @Test func developmentKeyIsTheCommittedOne() throws {
        // firmware-images/dev-public.pem must be this key (the simulator's default secure-boot key).
        #expect(DevelopmentKeys.publicKey.pem == KeyTests.devPublicPEM)
        let signed = sampleImage()
        try signed.verify(with: try VerificationKey(pem: KeyTests.devPublicPEM))
    }
}
