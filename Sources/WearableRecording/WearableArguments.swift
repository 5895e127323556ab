import Failure
import Support
import Wearable

/// A sensor, gesture or sample period that names none (a usage error: the text, and what it may be).
public typealias WearableArgumentError = CodedFailure<WearableArgumentErrors>

public enum WearableArgumentErrors: ErrorDomain {
    public static func category(of code: WearableArgumentError.Code) -> FailureCategory { .usage }
}

extension ErrorCodeIn where Domain == WearableArgumentError {
    /// No sensor, gesture or period of that name.
    public static let unknownName = Self(rawValue: "unknown-name")
}

extension WearableText {
    /// A sensor by name (game-rotation, gameRotation) or by id (0...); a negative number is no sensor's id (-1 is not
    /// read as 1).
    public static func sensorArgument(_ text: String) throws(WearableArgumentError) -> SensorType {
        guard !text.hasPrefix("-"), let s = sensor(named: text) else {
            throw WearableArgumentError(.unknownName, "unknown sensor '\(text)' (\(SensorType.allCases.map(\.description).joined(separator: ", ")))")
        }
        return s
    }

    /// A gesture by name (double-tap, doubleTap, double_tap) or by id (129 or 0x81; -0x81 is none, as for sensors).
    public static func gestureArgument(_ text: String) throws(WearableArgumentError) -> GestureType {
        guard !text.hasPrefix("-"), let g = gesture(named: text) else {
            throw WearableArgumentError(.unknownName, "unknown gesture '\(text)' (\(GestureType.allCases.map(\.description).joined(separator: ", ")))")
        }
        return g
    }

    /// A sample period: 320ms, 160ms, 80ms, 40ms or 20ms (any duration of `Quantities` equal to one of them, or a bare
    /// number of milliseconds); `option` names where it came from in the error.
    public static func periodArgument(_ text: String, option: String = "--period") throws(WearableArgumentError) -> SamplePeriod {
        let ms: Double? = Double(text)
            ?? Quantities.parseDuration(text).map { Double($0.components.seconds) * 1000 + Double($0.components.attoseconds) / 1e15 }
        guard let ms, ms == ms.rounded(), ms > 0, ms <= 320, let p = SamplePeriod(milliseconds: UInt16(ms)) else {
            throw WearableArgumentError(.unknownName, "\(option) '\(text)' is not a sample period (320ms, 160ms, 80ms, 40ms or 20ms)")
        }
        return p
    }
}
