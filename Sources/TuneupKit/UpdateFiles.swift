import Firmware
import Foundation
import LightX
import Support

extension FirmwareImage {
    /// The image at `path` (raw and Intel HEX images in `region`) and the key at `keyPath` that it must be signed with
    /// (nil: none), read on the blocking executor: what `tuneup flash` reads before it touches the device.
    /// - Throws: `ImageError` (a bad image or key; `.io`, "cannot read PATH: why", for a file that cannot be read).
    public static func loadForUpdate(path: String, region: FlashRegion?, keyPath: String?) async throws -> (FirmwareImage, VerificationKey?) {
        do {
            return try await Blocking.perform("flash image") {
                (try FirmwareImage.load(path: path, region: region), try keyPath.map { try VerificationKey.load(path: $0) })
            }
        } catch let error as ImageError {
            throw error
        } catch {
            throw ImageError(.io, "cannot read \(keyPath ?? path): \(error.localizedDescription)")
        }
    }
}
