import Failure
import Firmware
import Headset
import LightX

/// Why an update did not complete: a stable code and a one-line message.
public typealias UpdateError = CodedFailure<UpdateErrors>

/// The categories of `UpdateError`'s codes.
public enum UpdateErrors: ErrorDomain {
    /// A device that cannot be used now (lost, not ready, busy) is a connection failure; everything else the device's
    /// or the image's.
    public static func category(of code: UpdateError.Code) -> FailureCategory {
        switch code {
        case .disconnected, .notReady, .deviceBusy: .connection
        default: .device
        }
    }
}

extension UpdateError {
    /// The device is being updated by another host.
    static var busy: UpdateError {
        UpdateError(.deviceBusy, "another host is updating this device; wait for it to finish (or power-cycle the device)")
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

extension ErrorCodeIn where Domain == UpdateError {
    // Refused before anything was written to the device.
    /// The image is for another hardware model.
    public static var wrongModel: Self { Self(rawValue: "wrong-model") }
    /// The image does not fit its region.
    public static var tooLarge: Self { Self(rawValue: "too-large") }
    /// The image is older than what the device runs (use --allow-downgrade).
    public static var downgrade: Self { Self(rawValue: "downgrade") }
    /// A key is configured but the image is not signed.
    public static var unsigned: Self { Self(rawValue: "unsigned") }
    /// The image's signature or hash does not check out, or it was signed by another key.
    public static var badSignature: Self { Self(rawValue: "bad-signature") }
    /// The image file is unusable.
    public static var badImage: Self { Self(rawValue: "bad-image") }
    // During the update.
    /// The device never became ready (bootloader or application) within the wait.
    public static var notReady: Self { Self(rawValue: "not-ready") }
    /// The device refused the authentication.
    public static var authenticationFailed: Self { Self(rawValue: "authentication-failed") }
    /// The device answered a boot command with a failing status.
    public static var deviceRefused: Self { Self(rawValue: "device-refused") }
    /// The written image's CRC did not match, even after repairs.
    public static var verifyFailed: Self { Self(rawValue: "verify-failed") }
    /// The device refused to commit the image.
    public static var commitFailed: Self { Self(rawValue: "commit-failed") }
    /// The device did not start the new image.
    public static var bootFailed: Self { Self(rawValue: "boot-failed") }
    /// The device started but reports another version than the image's.
    public static var versionMismatch: Self { Self(rawValue: "version-mismatch") }
    /// The link could not be re-established within the wait, or keeps dropping without progress.
    public static var disconnected: Self { Self(rawValue: "disconnected") }
    /// Another host is updating the device (its bootloader answered Fail with the reason "BUSY").
    public static var deviceBusy: Self { Self(rawValue: "device-busy") }

    /// Whether the device was left untouched.
    public var refusedBeforeWriting: Bool {
        switch self {
        case .wrongModel, .tooLarge, .downgrade, .unsigned, .badSignature, .badImage: return true
        default: return false
        }
    }

    /// The codes this version knows (others may come from newer modules).
    public static var allCases: [Self] { [.wrongModel, .tooLarge, .downgrade, .unsigned, .badSignature, .badImage, .notReady, .authenticationFailed, .deviceRefused, .verifyFailed, .commitFailed, .bootFailed, .versionMismatch, .disconnected, .deviceBusy] }
}
