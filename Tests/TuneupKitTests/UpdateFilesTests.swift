import Firmware
import Testing
import TestSupport
import TuneupKit

/// What `tuneup flash` reads before it touches the device, in the library (issue 31 §1).
struct UpdateFilesTests {
    @Test func theImageAndItsKeyOrALocalFileFailure() async throws {
        let images = repositoryFolder("firmware-images")
        let (image, key) = try await FirmwareImage.loadForUpdate(path: images + "/app-1.5.0.img", region: nil, keyPath: images + "/dev-public.pem")
        #expect(image.bytes.count > 0 && key != nil)
        let missing = await #expect(throws: ImageError.self) {
            _ = try await FirmwareImage.loadForUpdate(path: images + "/no-such.img", region: nil, keyPath: nil)
        }
        #expect(missing?.category == .localFile)
    }
}
