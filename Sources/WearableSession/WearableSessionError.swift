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
    /// For `.refused` and `.rejectedLocally`: the device rule the configuration broke, when it is one of them.
    public var rule: WearableRule?

    public init(_ code: Code, _ message: String, category: FailureCategory, attError: ATTError? = nil, reason: String? = nil,
                rule: WearableRule? = nil) {
        self.code = code
        self.message = message
        self.category = category
        self.attError = attError
        self.reason = reason
        self.rule = rule ?? attError.flatMap(WearableRule.init(attError:))
    }
}

/// The rules of a Wearable device a configuration can break (docs/wearable.md §8), whether the library's checks
/// found it before sending or the device refused the write (its ATT application error).
public enum WearableRule: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A sample period the sensor does not offer (ATT 0x80).
    case periodNotOffered = "period-not-offered"
    /// More enabled sensors than maxActiveSensors (ATT 0x81).
    case tooManySensors = "too-many-sensors"
    /// More sensor data per transmission period than maxPayloadPerTransmissionPeriod (ATT 0x82).
    case payloadBudget = "payload-budget"
    /// A sensor the device does not have (ATT 0x83).
    case sensorNotAvailable = "sensor-not-available"
    /// A gesture the device does not recognise (ATT 0x84).
    case gestureNotAvailable = "gesture-not-available"
    /// Enabled sensors at different periods (ATT 0x85).
    case mixedPeriods = "mixed-periods"

    /// The rule an ATT application error stands for (nil for the generic ATT errors).
    public init?(attError: ATTError) {
        switch attError {
        case .periodNotAvailable: self = .periodNotOffered
        case .tooManySensors: self = .tooManySensors
        case .payloadBudgetExceeded: self = .payloadBudget
        case .sensorNotAvailable: self = .sensorNotAvailable
        case .gestureNotAvailable: self = .gestureNotAvailable
        case .mixedPeriods: self = .mixedPeriods
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .periodNotOffered: return "sample period not offered by the sensor"
        case .tooManySensors: return "too many sensors at once"
        case .payloadBudget: return "over the payload budget per transmission period"
        case .sensorNotAvailable: return "a sensor the device lacks"
        case .gestureNotAvailable: return "a gesture the device lacks"
        case .mixedPeriods: return "enabled sensors at different periods"
        }
    }
}

extension ErrorCodeIn where Domain == WearableSessionError {
    /// The session is not open (never opened, closed, or the link was lost).
    public static var notOpen: Self { Self(rawValue: "not-open") }
    /// The link was lost or closed by the peer.
    public static var disconnected: Self { Self(rawValue: "disconnected") }
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
    public static var connectionFailed: Self { Self(rawValue: "connection-failed") }

    public static var allCases: [Self] {
        [.notOpen, .disconnected, .writeFailed, .timeout, .refused, .rejectedLocally, .malformedReply, .notAWearable, .connectionFailed]
    }
}

extension WearableSessionError {
    static func refusal(_ key: GATTKey, _ error: ATTError, _ reason: String) -> WearableSessionError {
        WearableSessionError(.refused, "the device refused the \(key): \(error)" + (reason.isEmpty ? "" : ": \(reason)"),
                             category: .device, attError: error, reason: reason)
    }

    static func local(_ message: String, rule: WearableRule? = nil) -> WearableSessionError {
        WearableSessionError(.rejectedLocally, message, category: .usage, rule: rule)
    }

    static func malformed(_ message: String) -> WearableSessionError {
        WearableSessionError(.malformedReply, message, category: .device)
    }
}
