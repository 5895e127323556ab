import Testing
@testable import Firmware
import LightX

/// The signing policy (`ImageSigning`, behind `tuneup image sign` and `verify`): defaults from the payload's
/// manifest, what is refused, what is only warned about, and what a verification checks.
@Suite struct ImageSigningTests {
    static let payload = AppManifest.buildPayload(.factory, size: 4096, seed: 7)
    static let v150 = ImageVersion(major: 1, minor: 5, revision: 0)

    static func sign(_ payload: [UInt8] = payload, key: SigningKey? = Keys.dev, version: ImageVersion? = nil, model: String? = nil,
                     region: FlashRegion? = nil) throws(ImageError) -> ImageSigning.Signed {
        try ImageSigning.sign(payload: payload, name: "p.bin", key: key, version: version, model: model, region: region, headerSize: 0x200,
                              output: "app.img")
    }

    @Test func versionModelAndRegionComeFromTheManifest() throws {
        let signed = try Self.sign()
        #expect(signed.version == ImageVersion(parsing: "1.4.2") && signed.model == "TS-1" && signed.region == .application)
        #expect(signed.warnings.isEmpty)
        #expect(signed.image.version == signed.version && signed.image.model == "TS-1" && signed.image.region == .application)
        let file = try ImageFile(bytes: signed.image.bytes, name: "app.img")
        #expect(try ImageSigning.verify(file, key: Keys.dev.publicKey, region: nil).signatureChecked)
        // The same payload as Intel HEX signs to the same image.
        let hex = Array(IntelHex.encode(Self.payload, base: 0x40000).utf8)
        #expect(try Self.sign(hex).image.bytes == signed.image.bytes)
    }

    /// What differs from the manifest is used and warned about, in order; a region given is kept.
    @Test func whatDiffersFromTheManifestIsWarnedAbout() throws {
        let signed = try Self.sign(version: Self.v150, model: "TS-2", region: .resource)
        #expect(signed.version == Self.v150 && signed.model == "TS-2" && signed.region == .resource)
        #expect(signed.warnings == ["--version 1.5.0 differs from the payload manifest's version 1.4.2",
                                    "--model TS-2 differs from the payload manifest's model TS-1"])
    }

    /// Without a manifest: a version must be given (a usage error), and an image without a region is warned about.
    @Test func aPayloadWithoutAManifest() throws {
        let raw = [UInt8](repeating: 0x5A, count: 256)
        let missing = imageError { _ = try Self.sign(raw) }
        #expect(missing?.code == .noVersion && missing?.category == .usage
                && missing?.message == "p.bin has no application manifest to take the version from; give --version")
        let signed = try Self.sign(raw, key: nil, version: Self.v150)
        #expect(signed.region == nil && signed.model == nil && !signed.image.isSigned)
        #expect(signed.warnings == ["no region TLV: flashing app.img will need --region app|resource"])
    }

    @Test func anImageOrBrokenHexIsRefusedAndTooLargeIsWarned() throws {
        let image = try Self.sign().image.bytes
        let again = imageError { _ = try Self.sign(image) }
        #expect(again?.code == .badHeader && again?.message == "p.bin: is already an MCUboot image; sign its payload instead")
        let badHex = imageError { _ = try Self.sign(Array(":10000000ZZ\n".utf8)) }
        #expect(badHex?.code == .badHex && badHex?.message.hasPrefix("p.bin: ") == true)
        let big = AppManifest.buildPayload(.factory, size: FlashRegion.resource.maxSize, seed: 1)
        let signed = try Self.sign(big, key: nil, region: .resource)
        #expect(signed.warnings.count == 1 && signed.warnings[0].hasSuffix("does not fit the resource region (\(FlashRegion.resource.maxSize) bytes); tuneup flash will refuse it"))
    }

    /// A verification checks the signature against the key given, and the size against the region; a raw image passes
    /// without a key and is refused with one.
    @Test func verifyChecksTheKeyTheRegionAndRefusesUnsignedWithAKey() throws {
        let file = try ImageFile(bytes: try Self.sign().image.bytes, name: "app.img")
        let wrong = imageError { _ = try ImageSigning.verify(file, key: Keys.other.publicKey, region: nil) }
        #expect(wrong?.code == .wrongKey && wrong?.message.hasPrefix("app.img: ") == true)
        let contradicting = imageError { _ = try ImageSigning.verify(file, key: nil, region: .resource) }
        #expect(contradicting?.code == .noRegion)
        let unchecked = try ImageSigning.verify(file, key: nil, region: nil)
        #expect(unchecked.region == .application && !unchecked.signatureChecked)

        let raw = try ImageFile(bytes: [1, 2, 3], name: "raw.bin")
        let plain = try ImageSigning.verify(raw, key: nil, region: nil)
        #expect(plain.region == nil && !plain.signatureChecked)
        let keyed = imageError { _ = try ImageSigning.verify(raw, key: Keys.dev.publicKey, region: nil) }
        #expect(keyed?.code == .unsigned && keyed?.message == "raw.bin: is a raw image without a signature, but a key is required")
    }

    @Test func aHexNameIsWrittenAsIntelHex() {
        #expect(ImageSigning.fileBytes([1, 2], for: "a.bin", hexBase: 0x40000) == [1, 2])
        #expect(ImageSigning.fileBytes([1, 2], for: "a.HEX", hexBase: 0x40000) == Array(IntelHex.encode([1, 2], base: 0x40000).utf8))
    }
}
