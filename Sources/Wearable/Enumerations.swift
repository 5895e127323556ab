/// A sensor of a Bose Wearable device; its raw value is the sensor id on the wire (SensorInformation,
/// SensorConfiguration and SensorData records) and its bit in DeviceInformation's sensor mask.
public enum SensorType: UInt8, CaseIterable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Acceleration in g (vector with accuracy).
    case accelerometer = 0
    /// Angular rate in degrees per second (vector with accuracy).
    case gyroscope = 1
    /// Orientation relative to magnetic north (quaternion with estimated accuracy).
    case rotation = 2
    /// Orientation without the magnetometer (quaternion only).
    case gameRotation = 3
    /// Orientation angles (vector with accuracy). Not enabled by shipped firmware.
    case orientation = 4
    /// Calibrated magnetic field (vector with accuracy). Not enabled by shipped firmware.
    case magnetometer = 5
    /// Magnetic field and the estimated bias (two vectors). Not enabled by shipped firmware.
    case uncalibratedMagnetometer = 6

    /// The sensor with id `id`; throws `.unknownSensor` for any other byte (`context` starts the message).
    init(id: UInt8, in context: @autoclosure () -> String) throws(WearableError) {
        guard let sensor = SensorType(rawValue: id) else {
            throw WearableError(.unknownSensor, "\(context()): unknown sensor id \(id)")
        }
        self = sensor
    }

    /// The length in bytes of one sample of this sensor (after a record's id and timestamp): 7 for a vector with
    /// accuracy, 10 for a quaternion with estimated accuracy, 8 for a quaternion, 12 for a vector and its bias.
    public var sampleLength: Int {
        switch self {
        case .accelerometer, .gyroscope, .orientation, .magnetometer: return 7
        case .rotation: return 10
        case .gameRotation: return 8
        case .uncalibratedMagnetometer: return 12
        }
    }

    /// Whether the sample ends with a vector accuracy byte (0...3).
    public var hasVectorAccuracy: Bool {
        switch self {
        case .accelerometer, .gyroscope, .orientation, .magnetometer: return true
        case .rotation, .gameRotation, .uncalibratedMagnetometer: return false
        }
    }

    public var description: String {
        switch self {
        case .accelerometer: return "accelerometer"
        case .gyroscope: return "gyroscope"
        case .rotation: return "rotation"
        case .gameRotation: return "gameRotation"
        case .orientation: return "orientation"
        case .magnetometer: return "magnetometer"
        case .uncalibratedMagnetometer: return "uncalibratedMagnetometer"
        }
    }

    public static func < (l: Self, r: Self) -> Bool { l.rawValue < r.rawValue }
}

/// A sample period. It has two distinct encodings, never to be mixed up: its **bit position** (0 for 320 ms ...
/// 4 for 20 ms) in SensorInformation's available-periods mask, and its **milliseconds** in SensorConfiguration.
public enum SamplePeriod: CaseIterable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// 320 ms, 3.125 Hz (bit 0).
    case _320ms
    /// 160 ms, 6.25 Hz (bit 1).
    case _160ms
    /// 80 ms, 12.5 Hz (bit 2).
    case _80ms
    /// 40 ms, 25 Hz (bit 3).
    case _40ms
    /// 20 ms, 50 Hz (bit 4).
    case _20ms

    /// The period in milliseconds, as SensorConfiguration carries it: 320, 160, 80, 40 or 20.
    public var milliseconds: UInt16 {
        switch self {
        case ._320ms: return 320
        case ._160ms: return 160
        case ._80ms: return 80
        case ._40ms: return 40
        case ._20ms: return 20
        }
    }

    /// The bit position in SensorInformation's available-periods mask: 0 (320 ms) to 4 (20 ms).
    public var bitPosition: Int {
        switch self {
        case ._320ms: return 0
        case ._160ms: return 1
        case ._80ms: return 2
        case ._40ms: return 3
        case ._20ms: return 4
        }
    }

    /// Samples per second: 3.125 to 50.
    public var frequency: Double { 1000 / Double(milliseconds) }

    /// The period of `milliseconds` (320, 160, 80, 40, 20); nil for anything else, 0 included.
    public init?(milliseconds: UInt16) {
        guard let p = Self.allCases.first(where: { $0.milliseconds == milliseconds }) else { return nil }
        self = p
    }

    /// The period at `bitPosition` (0...4) of the available-periods mask; nil for any other position.
    public init?(bitPosition: Int) {
        guard let p = Self.allCases.first(where: { $0.bitPosition == bitPosition }) else { return nil }
        self = p
    }

    public var description: String { "\(milliseconds) ms" }

    /// Longer periods first, as the mask's bits go: 320 ms < 160 ms < ... < 20 ms.
    public static func < (l: Self, r: Self) -> Bool { l.bitPosition < r.bitPosition }

    /// The periods of an available-periods mask; throws `.reservedBits` for bits above 4.
    static func set(fromMask mask: UInt16, in context: String) throws(WearableError) -> Set<SamplePeriod> {
        let known = allCases.reduce(UInt16(0)) { $0 | 1 << UInt16($1.bitPosition) }
        guard mask & ~known == 0 else {
            throw WearableError(.reservedBits, "\(context): available-periods mask 0x\(hex16(mask)) sets bits above 4")
        }
        return Set(allCases.filter { mask & 1 << UInt16($0.bitPosition) != 0 })
    }

    /// The available-periods mask of `periods`.
    static func mask(of periods: Set<SamplePeriod>) -> UInt16 {
        periods.reduce(0) { $0 | 1 << UInt16($1.bitPosition) }
    }
}

/// A gesture; its raw value is the gesture id on the wire. In DeviceInformation's gesture mask the gestures take
/// bits 0...3 (`bitPosition`).
public enum GestureType: UInt8, CaseIterable, Sendable, Hashable, Comparable, CustomStringConvertible {
    case singleTap = 0x80
    case doubleTap = 0x81
    case headNod = 0x82
    case headShake = 0x83

    /// The gesture with id `id`; throws `.unknownGesture` for any other byte (`context` starts the message).
    init(id: UInt8, in context: @autoclosure () -> String) throws(WearableError) {
        guard let gesture = GestureType(rawValue: id) else {
            throw WearableError(.unknownGesture, "\(context()): unknown gesture id 0x\(hexByte(id))")
        }
        self = gesture
    }

    /// The bit in DeviceInformation's gesture mask: 0 (singleTap) to 3 (headShake).
    public var bitPosition: Int { Int(rawValue - 0x80) }

    public var description: String {
        switch self {
        case .singleTap: return "singleTap"
        case .doubleTap: return "doubleTap"
        case .headNod: return "headNod"
        case .headShake: return "headShake"
        }
    }

    public static func < (l: Self, r: Self) -> Bool { l.rawValue < r.rawValue }
}

/// The accuracy byte of a vector sample.
public enum VectorAccuracy: UInt8, CaseIterable, Sendable, Hashable, Comparable {
    case unreliable = 0
    case low = 1
    case medium = 2
    case high = 3

    public static func < (l: Self, r: Self) -> Bool { l.rawValue < r.rawValue }
}

/// A sample's or a gesture's timestamp: milliseconds of the device's clock, wrapping every 65.536 s.
public typealias SensorTimestamp = UInt16

/// A u32 mask of the bits of `positions`.
func mask32(_ positions: [Int]) -> UInt32 { positions.reduce(0) { $0 | 1 << UInt32($1) } }

/// The values of a u32 bitmask whose bit n is the value with `position(value) == n`; throws `.reservedBits` for a bit
/// no value has.
func members<T: CaseIterable & Hashable>(
    of mask: UInt32, position: (T) -> Int, what: String, in context: String
) throws(WearableError) -> Set<T> {
    let known = mask32(T.allCases.map(position))
    guard mask & ~known == 0 else {
        let extra = mask & ~known
        throw WearableError(.reservedBits, "\(context): \(what) mask sets bit \(extra.trailingZeroBitCount), which names no \(what)")
    }
    return Set(T.allCases.filter { mask & 1 << UInt32(position($0)) != 0 })
}
