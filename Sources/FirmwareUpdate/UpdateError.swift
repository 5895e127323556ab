import Firmware
import Headset
import LightX

/// Why an update did not complete: a stable code and a one-line message.
public struct UpdateError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        // Refused before anything was written to the device.
        /// The image is for another hardware model.
        case wrongModel = "wrong-model"
        /// The image does not fit its region.
        case tooLarge = "too-large"
        /// The image is older than what the device runs (use --allow-downgrade).
        case downgrade
        /// A key is configured but the image is not signed.
        case unsigned
        /// The image's signature or hash does not check out, or it was signed by another key.
        case badSignature = "bad-signature"
        /// The image file is unusable.
        case badImage = "bad-image"
        // During the update.
        /// The device never became ready (bootloader or application) within the wait.
        case notReady = "not-ready"
        /// The device refused the authentication.
        case authenticationFailed = "authentication-failed"
        /// The device answered a boot command with a failing status.
        case deviceRefused = "device-refused"
        /// The written image's CRC did not match, even after repairs.
        case verifyFailed = "verify-failed"
        /// The device refused to commit the image.
        case commitFailed = "commit-failed"
        /// The device did not start the new image.
        case bootFailed = "boot-failed"
        /// The device started but reports another version than the image's.
        case versionMismatch = "version-mismatch"
        /// The link could not be re-established within the wait, or keeps dropping without progress.
        case connectionLost = "connection-lost"
        /// Another host is updating the device (its bootloader answered Fail with the reason "BUSY").
        case deviceBusy = "device-busy"

        /// Whether the device was left untouched.
        public var refusedBeforeWriting: Bool {
            switch self {
            case .wrongModel, .tooLarge, .downgrade, .unsigned, .badSignature, .badImage: return true
            default: return false
            }
        }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
    public static func == (lhs: UpdateError, rhs: UpdateError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// The device is being updated by another host.
    static let busy = UpdateError(.deviceBusy, "another host is updating this device; wait for it to finish (or power-cycle the device)")

    /// Throws `.deviceBusy` when `reply` says another host's update owns the device.
    static func checkBusy(_ reply: Packet) throws {
        if BootRefusalReason(reply: reply) == .busy { throw busy }
    }

    /// The refusal for an image error found before touching the device.
    static func image(_ error: ImageError) -> UpdateError {
        switch error.code {
        case .tooLarge: return UpdateError(.tooLarge, error.message)
        case .unsigned: return UpdateError(.unsigned, error.message)
        case .badHash, .badSignature, .wrongKey: return UpdateError(.badSignature, error.message)
        default: return UpdateError(.badImage, error.message)
        }
    }
}
