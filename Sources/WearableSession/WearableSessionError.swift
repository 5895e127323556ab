import Failure
import Transport
import WearableLink

/// An error of a Wearable session, with a stable code and one line.
public struct WearableSessionError: CodedError, Hashable {
    public typealias Code = ErrorCodeIn<WearableSessionError>

    public var code: Code
    public var message: String
    public var category: FailureCategory
    /// For `.refused`: the device's ATT error code.
    public var attError: ATTError?
    /// For `.refused`: the device's reason.
    public var reason: String?

    public init(_ code: Code, _ message: String, category: FailureCategory, attError: ATTError? = nil, reason: String? = nil) {
        self.code = code
        self.message = message
        self.category = category
        self.attError = attError
        self.reason = reason
    }
}

extension ErrorCodeIn where Domain == WearableSessionError {
    /// The session is not open (never opened, closed, or the link was lost).
    public static var notOpen: Self { Self(rawValue: "not-open") }
    /// The link was lost or closed by the peer.
    public static var linkLost: Self { Self(rawValue: "link-lost") }
    /// Sending failed.
    public static var writeFailed: Self { Self(rawValue: "write-failed") }
    /// The device did not answer in time.
    public static var timeout: Self { Self(rawValue: "timeout") }
    /// The device answered with an ATT error (`attError`, `reason`).
    public static var refused: Self { Self(rawValue: "refused") }
    /// The library refused a request before sending it (it is surely wrong for this device).
    public static var rejectedLocally: Self { Self(rawValue: "rejected-locally") }
    /// The device answered with something the session cannot use.
    public static var malformedReply: Self { Self(rawValue: "malformed-reply") }
    /// The peer has no Bose Wearable service (0xFDD2) or lacks one of its characteristics.
    public static var notAWearable: Self { Self(rawValue: "not-a-wearable") }
    /// Opening the link failed.
    public static var connectFailed: Self { Self(rawValue: "connect-failed") }

    public static var allCases: [Self] {
        [.notOpen, .linkLost, .writeFailed, .timeout, .refused, .rejectedLocally, .malformedReply, .notAWearable, .connectFailed]
    }
}

extension WearableSessionError {
    static func refusal(_ key: GATTKey, _ error: ATTError, _ reason: String) -> WearableSessionError {
        WearableSessionError(.refused, "the device refused the \(key): \(error)" + (reason.isEmpty ? "" : ": \(reason)"),
                             category: .device, attError: error, reason: reason)
    }

    static func local(_ message: String) -> WearableSessionError {
        WearableSessionError(.rejectedLocally, message, category: .usage)
    }

    static func malformed(_ message: String) -> WearableSessionError {
        WearableSessionError(.malformedReply, message, category: .device)
    }
}
