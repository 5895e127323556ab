import Failure
import Speaker
import Transport

/// Every failure of a speaker session, controller or discovery: a stable code, a category (the CLI's exit code) and
/// one line. Compares by code only.
public struct SpeakerSessionError: CodedError, Hashable {
    public typealias Code = ErrorCodeIn<SpeakerSessionError>

    public var code: Code
    public var message: String
    /// For `.refused`: the speaker's error code.
    public var deviceCode: DeviceErrorCode?

    public init(_ code: Code, _ message: String, deviceCode: DeviceErrorCode? = nil) {
        self.code = code
        self.message = message
        self.deviceCode = deviceCode
    }

    public var category: FailureCategory {
        switch code {
        case .invalidArgument, .unknownDevice: .usage
        case .refused, .unexpectedReply, .versionMismatch: .device
        default: .connection
        }
    }

    /// A transport failure, with what was being done.
    public static func transport(_ error: TransportError, while doing: String) -> SpeakerSessionError {
        SpeakerSessionError(.disconnected, "\(doing): \(error.message)")
    }
}

extension ErrorCodeIn where Domain == SpeakerSessionError {
    /// A value out of range or otherwise unusable; nothing was sent.
    public static var invalidArgument: Self { Self(rawValue: "invalid-argument") }
    /// No speaker with that id, index or group.
    public static var unknownDevice: Self { Self(rawValue: "unknown-device") }
    /// The speaker answered `failed` (its code in `deviceCode`).
    public static var refused: Self { Self(rawValue: "refused") }
    /// The speaker answered with a message that does not answer the request.
    public static var unexpectedReply: Self { Self(rawValue: "unexpected-reply") }
    /// No protocol version in common.
    public static var versionMismatch: Self { Self(rawValue: "version-mismatch") }
    /// No answer in time.
    public static var timeout: Self { Self(rawValue: "timeout") }
    /// The link was lost.
    public static var disconnected: Self { Self(rawValue: "disconnected") }
    /// The speaker could not be reached (connection refused, no route, connect timeout).
    public static var connectionFailed: Self { Self(rawValue: "connection-failed") }
    /// The session is closed.
    public static var notConnected: Self { Self(rawValue: "not-connected") }
    /// The playback was taken over: another controller's stream replaced this one on the speakers.
    public static var interrupted: Self { Self(rawValue: "interrupted") }
    /// Discovery could not run (no socket).
    public static var discoveryFailed: Self { Self(rawValue: "discovery-failed") }
}
