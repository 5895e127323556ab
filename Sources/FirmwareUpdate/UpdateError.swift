import Failure
import Firmware
import Headset
import LightX

/// Why an update did not complete: a stable code and a one-line message.
public struct UpdateError: CodedError, Hashable {
    public struct Code: ErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        // Refused before anything was written to the device.
        /// The image is for another hardware model.
        public static let wrongModel = Code(rawValue: "wrong-model")
        /// The image does not fit its region.
        public static let tooLarge = Code(rawValue: "too-large")
        /// The image is older than what the device runs (use --allow-downgrade).
        public static let downgrade = Code(rawValue: "downgrade")
        /// A key is configured but the image is not signed.
        public static let unsigned = Code(rawValue: "unsigned")
        /// The image's signature or hash does not check out, or it was signed by another key.
        public static let badSignature = Code(rawValue: "bad-signature")
        /// The image file is unusable.
        public static let badImage = Code(rawValue: "bad-image")
        // During the update.
        /// The device never became ready (bootloader or application) within the wait.
        public static let notReady = Code(rawValue: "not-ready")
        /// The device refused the authentication.
        public static let authenticationFailed = Code(rawValue: "authentication-failed")
        /// The device answered a boot command with a failing status.
        public static let deviceRefused = Code(rawValue: "device-refused")
        /// The written image's CRC did not match, even after repairs.
        public static let verifyFailed = Code(rawValue: "verify-failed")
        /// The device refused to commit the image.
        public static let commitFailed = Code(rawValue: "commit-failed")
        /// The device did not start the new image.
        public static let bootFailed = Code(rawValue: "boot-failed")
        /// The device started but reports another version than the image's.
        public static let versionMismatch = Code(rawValue: "version-mismatch")
        /// The link could not be re-established within the wait, or keeps dropping without progress.
        public static let connectionLost = Code(rawValue: "connection-lost")
        /// Another host is updating the device (its bootloader answered Fail with the reason "BUSY").
        public static let deviceBusy = Code(rawValue: "device-busy")

        /// Whether the device was left untouched.
        public var refusedBeforeWriting: Bool {
            switch self {
            case .wrongModel, .tooLarge, .downgrade, .unsigned, .badSignature, .badImage: return true
            default: return false
            }
        }

        /// The codes this version knows (others may come from newer modules).
        public static let allCases: [Code] = [.wrongModel, .tooLarge, .downgrade, .unsigned, .badSignature, .badImage, .notReady, .authenticationFailed, .deviceRefused, .verifyFailed, .commitFailed, .bootFailed, .versionMismatch, .connectionLost, .deviceBusy]
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// A device that cannot be used now (lost, not ready, busy) is a connection failure; everything else the device's
    /// or the image's.
    public var category: FailureCategory {
        switch code {
        case .connectionLost, .notReady, .deviceBusy: return .connection
        default: return .device
        }
    }
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
