#if canImport(Failure)
import Failure  // tools/fuzz/wearable/run.sh compiles Wearable and Failure as one module
#endif

/// An error from decoding, encoding or building Bose Wearable values, with a stable code and a one-line message.
///
/// Decoding errors (bytes from a device) are in the `.device` category; building a value that cannot exist (two
/// entries for one sensor, a physical value no raw integer represents) is a `.usage` error.
public struct WearableError: CodedError, Hashable {
    /// Stable classification.
    public typealias Code = ErrorCodeIn<WearableError>

    /// The stable code.
    public var code: Code
    /// One line naming the payload, the entry or record and what is wrong.
    public var message: String
    /// `.device` for device bytes, `.usage` for values built wrong in code.
    public var category: FailureCategory

    /// An error of `code`, `message` and `category`.
    public init(_ code: Code, _ message: String, category: FailureCategory = .device) {
        self.code = code
        self.message = message
        self.category = category
    }
}

extension ErrorCodeIn where Domain == WearableError {
    /// Fewer bytes than the layout needs (a fixed payload, an entry or a record cut short, an empty notification).
    public static var truncated: Self { Self(rawValue: "truncated") }
    /// More bytes than a fixed-length payload holds, or a field whose value the layout does not allow.
    public static var malformed: Self { Self(rawValue: "malformed") }
    /// A sensor id that is not one of the seven `SensorType`s.
    public static var unknownSensor: Self { Self(rawValue: "unknown-sensor") }
    /// A gesture id that is not one of the four `GestureType`s.
    public static var unknownGesture: Self { Self(rawValue: "unknown-gesture") }
    /// A period in milliseconds that is not 0 (disabled) or one of the five sample periods.
    public static var unknownPeriod: Self { Self(rawValue: "unknown-period") }
    /// A bit set in a mask where the layout defines none.
    public static var reservedBits: Self { Self(rawValue: "reserved-bits") }
    /// A sensor data record of a sensor the device's SensorInformation does not list (so its length is unknown).
    public static var sensorNotListed: Self { Self(rawValue: "sensor-not-listed") }
    /// A SensorInformation sample length that is not the length of that sensor's sample.
    public static var sampleLengthMismatch: Self { Self(rawValue: "sample-length-mismatch") }
    /// A sensor's raw or scaled range that cannot scale (min not below max).
    public static var invalidRange: Self { Self(rawValue: "invalid-range") }
    /// Two entries for the same sensor or gesture.
    public static var duplicateEntry: Self { Self(rawValue: "duplicate-entry") }
    /// Enabled sensors with different periods (they share one).
    public static var mixedPeriods: Self { Self(rawValue: "mixed-periods") }
    /// A physical value that no raw i16 of the sensor's range represents (or is not a number).
    public static var valueOutOfRange: Self { Self(rawValue: "value-out-of-range") }

    /// The codes this version knows (others may come from newer modules).
    public static var allCases: [Self] {
        [.truncated, .malformed, .unknownSensor, .unknownGesture, .unknownPeriod, .reservedBits, .sensorNotListed,
         .sampleLengthMismatch, .invalidRange, .duplicateEntry, .mixedPeriods, .valueOutOfRange]
    }
}
