import Foundation
import Testing
import LightX
@testable import Firmware

/// The files in firmware-images/ are what its README says (built by tools/make-firmware-images.sh).
@Suite(.enabled(if: CommittedImages.directory != nil, "firmware-images/ not found next to Tests/"))
struct CommittedImagesTests {
    func path(_ name: String) -> String { CommittedImages.directory! + "/" + name }
    func load(_ name: String, region: FlashRegion? = nil) throws -> FirmwareImage { try FirmwareImage.load(path: path(name), region: region) }
    func manifest(_ name: String) throws -> AppManifest {
        try AppManifest(json: Array(try Data(contentsOf: URL(fileURLWithPath: path("manifests/" + name)))))
    }
    let devKey = DevelopmentKeys.publicKey

    @Test func keysAreTheDevelopmentKeys() throws {
        #expect(try VerificationKey.load(path: path("dev-public.pem")) == devKey)
        #expect(try String(contentsOfFile: path("dev-public.pem"), encoding: .utf8) == devKey.pem)
        #expect(try String(contentsOfFile: path("test-only-dev-private.pem"), encoding: .utf8) == DevelopmentKeys.testOnlyPrivateKeyPEM)
        #expect(try SigningKey.load(path: path("test-only-other-private.pem")).publicKey == Keys.other.publicKey)
    }

    @Test(arguments: [("app-1.3.0.img", "1.3.0", 4), ("app-1.4.2.img", "1.4.2", 4), ("app-1.4.3-small.img", "1.4.3", 4),
                      ("app-1.5.0.img", "1.5.0", 5), ("app-2.0.0.img", "2.0.0", 5)])
    func applicationImages(_ name: String, _ version: String, _ presets: Int) throws {
        let image = try load(name)
        try image.verify(with: devKey)
        #expect(image.format == .mcuboot && image.region == .application && image.model == "TS-1")
        #expect(image.version == ImageVersion(parsing: version))
        let m = try #require(image.manifest)
        #expect(m.version == version && m.model == "TS-1")
        #expect(m.presets.count == presets)
        #expect(m == (try manifest("app-\(version).json")))
    }

    @Test func visibleDifferences() throws {
        #expect(try load("app-1.4.2.img").manifest == .factory)
        let factory = try load("app-1.4.2.img").bytes
        #if os(Linux)
        let same = factory == SampleImages.factoryApplication.bytes   // deterministic Ed25519 (BoringSSL)
        #else
        let same = factory.dropLast(64) == SampleImages.factoryApplication.bytes.dropLast(64)
        #endif
        #expect(same, "app-1.4.2.img is not SampleImages.factoryApplication: run tools/make-firmware-images.sh")
        let newer = try #require(try load("app-1.5.0.img").manifest)
        #expect(newer.product == "Tuneup Sim Headset Pro" && newer.presets.last?.name == "Bass Boost")
        let major = try #require(try load("app-2.0.0.img").manifest)
        #expect(major.bandFrequencies.count == 8 && major.presets.allSatisfy { $0.gains.count == 8 })
        let small = try load("app-1.4.3-small.img")
        #expect(small.bytes.count < 8192 && small.sectorCount == 2)
    }

    @Test func resourceAndRawImages() throws {
        let resource = try load("resource-1.0.0.img")
        try resource.verify(with: devKey)
        #expect(resource.region == .resource && resource.version == ImageVersion(major: 1, minor: 0, revision: 0) && resource.manifest == nil)

        for name in ["raw-app-1.5.0-no-region.bin", "raw-app-1.4.3-small.hex"] {
            #expect(imageError { _ = try load(name) }?.code == .noRegion)
            let raw = try load(name, region: .application)
            #expect(raw.mcuboot == nil && raw.manifest != nil)
            try raw.verify(with: nil)
            #expect(imageError { try raw.verify(with: devKey) }?.code == .unsigned)
        }
        #expect(try load("raw-app-1.4.3-small.hex", region: .application).format == .intelHex)
    }

    @Test(arguments: [("broken-truncated.img", ImageError.Code.truncated), ("broken-bad-hash.img", .badHash),
                      ("broken-bad-signature.img", .badSignature), ("broken-other-key.img", .wrongKey),
                      ("broken-unsigned.img", .unsigned), ("broken-too-large.img", .tooLarge)])
    func brokenImages(_ name: String, _ code: ImageError.Code) {
        let e = imageError { try load(name).verify(with: devKey) }
        #expect(e?.code == code, "\(name): \(e?.message ?? "accepted")")
        #expect(e?.message.contains(name) == true)
    }

    @Test func otherModelIsValidButForTS9() throws {
        let image = try load("broken-other-model.img")
        try image.verify(with: devKey)
        #expect(image.model == "TS-9" && image.manifest?.model == "TS-9")
    }

    @Test func tooLargeIsOtherwiseValid() throws {
        let file = try ImageFile.load(path: path("broken-too-large.img"))
        let m = try #require(file.mcuboot)
        try m.verify(with: devKey)
        #expect(file.bytes.count > FlashRegion.application.maxSize && m.region == .application)
    }
}

enum CommittedImages {
    /// …/firmware-images, found from this source file (symlinks resolved, so it works from a workspace too).
    static let directory: String? = {
        var url = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            url = url.deletingLastPathComponent()
            let candidate = url.appendingPathComponent("firmware-images")
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("dev-public.pem").path) { return candidate.path }
        }
        return nil
    }()
}
