import Failure
import LightX
import Transport

/// Every failure of a headset operation: a stable `code` for programs, a one-line `message` for people.
///
/// The codes cover the vendor SDK's error list (device not connected, no raw data, challenge length, more than
/// 10 bands, no bands, wrong number of bands, connection failures, writing failed) and every status a device
/// can answer with. Errors compare by code only.
public struct HeadsetError: CodedError, Hashable {
    /// Stable error codes. Raw values are part of the JSON output and never change meaning.
    public typealias Code = ErrorCodeIn<HeadsetError>

    /// Broad classes of failure (the one `FailureCategory` of every module).
    public typealias Category = FailureCategory

    public var code: Code
    public var message: String
    /// The device status behind a `device*` code.
    public var status: Status?
    /// The command concerned, when there is one.
    public var command: Command?
    /// Why the device failed the request, when it said (Tuneup extension: e.g. `.busy`, another host is updating it).
    public var reason: BootRefusalReason?

    public init(_ code: Code, _ message: String, status: Status? = nil, command: Command? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.command = command
    }

    /// The broad class of this error.
    public var category: Category { code.category }

    /// The error for a reply with a failing `status` to `command`; `buffer` is the reply's, which may give a reason.
    public static func deviceStatus(_ status: Status, command: Command, buffer: ArraySlice<UInt8> = []) -> HeadsetError {
        let code: Code
        let meaning: String
        switch status {
        case .fail: code = .deviceFailed; meaning = "failed"
        case .notFound: code = .deviceNotFound; meaning = "not found"
        case .notSupported: code = .deviceNotSupported; meaning = "not supported by this device"
        case .exceededLimits: code = .deviceExceededLimits; meaning = "value outside the device's limits"
        case .notReady: code = .deviceNotReady; meaning = "device not ready"
        case .commFailure: code = .deviceCommFailure; meaning = "device communication failure"
        default: code = .deviceUnknownStatus; meaning = "unknown status 0x" + String(status.rawValue, radix: 16)
        }
        var error = HeadsetError(code, "\(commandName(command)): \(meaning)", status: status, command: command)
        error.reason = BootRefusalReason(status: status, buffer: buffer)
        if error.reason == .busy { error.message += " (another host is updating this device)" }
        return error
    }

    /// Wraps a transport error that happened while opening or using the link.
    public static func transport(_ error: TransportError, while action: String) -> HeadsetError {
        let code: Code
        switch error.code {
        case .closed: code = .disconnected
        case .notFound, .unsupported, .invalidAddress: code = .deviceNotAvailable
        case .busy: code = .alreadyConnected
        default: code = .connectionFailed
        }
        return HeadsetError(code, action.isEmpty ? error.message : "\(action): \(error.message)")
    }

    /// Wraps a reply-decoding error.
    public static func malformed(_ error: LightXError, command: Command) -> HeadsetError {
        HeadsetError(error.code == .truncated ? .noData : .malformedReply,
                     "\(commandName(command)): \(error.message)", command: command)
    }
}

/// "AppANCEnable" for known commands, "command 0xNN" otherwise.
func commandName(_ command: Command) -> String {
    command.name ?? "command 0x" + String(command.rawValue, radix: 16)
}

extension ErrorCodeIn where Domain == HeadsetError {

    // Connection (SDK: CONNECTION_PROCESS_FAILED_*, DEVICE_NOT_CONNECTED, WRITING_PROCESS_IN_AVNERA_FAILED).
    /// The device could not be opened or connected to.
    public static var connectionFailed: Self { Self(rawValue: "connection-failed") }
    /// The device address or link kind does not exist on this host.
    public static var deviceNotAvailable: Self { Self(rawValue: "device-not-available") }
    /// A session is already open on this device.
    public static var alreadyConnected: Self { Self(rawValue: "already-connected") }
    /// The session is closed or was never connected.
    public static var deviceNotConnected: Self { Self(rawValue: "device-not-connected") }
    /// The link went down while waiting for the device.
    public static var disconnected: Self { Self(rawValue: "disconnected") }
    /// Sending a request failed.
    public static var writeFailed: Self { Self(rawValue: "write-failed") }
    /// The device did not answer in time (after the configured retransmissions).
    public static var timeout: Self { Self(rawValue: "timeout") }

    // Data (SDK: NO_ROW_DATA_ERROR, CHALLENGE_LENGTH_NOT_16_BYTES_AS_EXPECTED, band errors).
    /// The device answered without the data the request needs.
    public static var noData: Self { Self(rawValue: "no-data") }
    /// A reply did not fit its layout.
    public static var malformedReply: Self { Self(rawValue: "malformed-reply") }
    /// The authentication challenge was not 16 bytes.
    public static var challengeLength: Self { Self(rawValue: "challenge-length") }
    /// The device refused the authentication response.
    public static var authenticationFailed: Self { Self(rawValue: "authentication-failed") }
    /// The device reports more than 10 graphic-EQ bands.
    public static var tooManyBands: Self { Self(rawValue: "too-many-bands") }
    /// The device reports no graphic-EQ bands.
    public static var noBands: Self { Self(rawValue: "no-bands") }
    /// A reply or an argument has a different number of bands than the device reports.
    public static var wrongNumberOfBands: Self { Self(rawValue: "wrong-number-of-bands") }

    // Arguments, checked before anything is sent.
    /// A value outside the range the device accepts.
    public static var invalidArgument: Self { Self(rawValue: "invalid-argument") }

    // Device status codes (sheet §2.3) other than Ok and Pending.
    public static var deviceFailed: Self { Self(rawValue: "device-failed") }
    public static var deviceNotFound: Self { Self(rawValue: "device-not-found") }
    public static var deviceNotSupported: Self { Self(rawValue: "device-not-supported") }
    public static var deviceExceededLimits: Self { Self(rawValue: "device-exceeded-limits") }
    public static var deviceNotReady: Self { Self(rawValue: "device-not-ready") }
    public static var deviceCommFailure: Self { Self(rawValue: "device-comm-failure") }
    public static var deviceUnknownStatus: Self { Self(rawValue: "device-unknown-status") }

    /// The broad class of the failure, used for exit codes.
    public var category: FailureCategory {
        switch self {
        case .connectionFailed, .deviceNotAvailable, .alreadyConnected, .deviceNotConnected, .disconnected,
             .writeFailed, .timeout:
            return .connection
        case .invalidArgument:
            return .usage
        default:
            return .device
        }
    }

    /// The codes this version knows (others may come from newer modules).
    public static var allCases: [Self] { [.connectionFailed, .deviceNotAvailable, .alreadyConnected, .deviceNotConnected, .disconnected, .writeFailed, .timeout, .noData, .malformedReply, .challengeLength, .authenticationFailed, .tooManyBands, .noBands, .wrongNumberOfBands, .invalidArgument, .deviceFailed, .deviceNotFound, .deviceNotSupported, .deviceExceededLimits, .deviceNotReady, .deviceCommFailure, .deviceUnknownStatus] }
}
