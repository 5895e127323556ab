/// Three raw i16 components, as a vector sample carries them (x, y, z, big-endian).
public struct RawVector: Sendable, Hashable {
    public var x: Int16
    public var y: Int16
    public var z: Int16

    public init(x: Int16, y: Int16, z: Int16) {
        self.x = x
        self.y = y
        self.z = z
    }

    /// The raw vector nearest to `vector` in `range`; throws `.valueOutOfRange` when a component has no i16.
    public init(_ vector: Vector, in range: SensorRange) throws(WearableError) {
        self.init(x: try range.raw(vector.x), y: try range.raw(vector.y), z: try range.raw(vector.z))
    }

    /// The physical vector in `range`.
    public func scaled(by range: SensorRange) -> Vector {
        Vector(x: range.value(raw: x), y: range.value(raw: y), z: range.value(raw: z))
    }

    static func read(_ r: inout WireReader, _ what: String) throws(WearableError) -> RawVector {
        RawVector(x: try r.i16("\(what) x"), y: try r.i16("\(what) y"), z: try r.i16("\(what) z"))
    }

    func write(to w: inout WireWriter) {
        w.i16(x)
        w.i16(y)
        w.i16(z)
    }
}

/// Four raw i16 components of a quaternion (x, y, z, w, big-endian).
public struct RawQuaternion: Sendable, Hashable {
    public var x: Int16
    public var y: Int16
    public var z: Int16
    public var w: Int16

    public init(x: Int16, y: Int16, z: Int16, w: Int16) {
        self.x = x
        self.y = y
        self.z = z
        self.w = w
    }

    /// The raw quaternion nearest to `quaternion` in `range`; throws `.valueOutOfRange` when a component has no i16.
    public init(_ quaternion: Quaternion, in range: SensorRange) throws(WearableError) {
        self.init(x: try range.raw(quaternion.x), y: try range.raw(quaternion.y), z: try range.raw(quaternion.z),
                  w: try range.raw(quaternion.w))
    }

    /// The quaternion in `range` (the device's unit quaternions when the range is that of a rotation sensor).
    public func scaled(by range: SensorRange) -> Quaternion {
        Quaternion(x: range.value(raw: x), y: range.value(raw: y), z: range.value(raw: z), w: range.value(raw: w))
    }

    static func read(_ r: inout WireReader) throws(WearableError) -> RawQuaternion {
        RawQuaternion(x: try r.i16("quaternion x"), y: try r.i16("quaternion y"), z: try r.i16("quaternion z"),
                      w: try r.i16("quaternion w"))
    }

    func write(to writer: inout WireWriter) {
        writer.i16(x)
        writer.i16(y)
        writer.i16(z)
        writer.i16(w)
    }
}

/// A physical vector: the sensor's unit (g for the accelerometer, degrees per second for the gyroscope).
public struct Vector: Sendable, Hashable {
    public var x: Double
    public var y: Double
    public var z: Double

    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }
}

/// A physical quaternion.
public struct Quaternion: Sendable, Hashable {
    public var x: Double
    public var y: Double
    public var z: Double
    public var w: Double

    public init(x: Double, y: Double, z: Double, w: Double) {
        self.x = x
        self.y = y
        self.z = z
        self.w = w
    }
}

/// One sample as it travels, raw integers and all: the case says the sensor, so a sample always has its sensor's
/// shape. Scale it with the sensor's `SensorRange` (`scaled(by:)`).
public enum SensorSample: Sendable, Hashable {
    /// x, y, z i16 + accuracy u8 (7 bytes).
    case accelerometer(RawVector, accuracy: VectorAccuracy)
    /// x, y, z i16 + accuracy u8 (7 bytes).
    case gyroscope(RawVector, accuracy: VectorAccuracy)
    /// Quaternion x, y, z, w i16 + estimated accuracy i16 (10 bytes).
    case rotation(RawQuaternion, accuracy: Int16)
    /// Quaternion x, y, z, w i16 (8 bytes).
    case gameRotation(RawQuaternion)
    /// x, y, z i16 + accuracy u8 (7 bytes).
    case orientation(RawVector, accuracy: VectorAccuracy)
    /// x, y, z i16 + accuracy u8 (7 bytes).
    case magnetometer(RawVector, accuracy: VectorAccuracy)
    /// Vector x, y, z i16 + bias x, y, z i16 (12 bytes).
    case uncalibratedMagnetometer(RawVector, bias: RawVector)

    /// The sensor the sample belongs to.
    public var sensor: SensorType {
        switch self {
        case .accelerometer: return .accelerometer
        case .gyroscope: return .gyroscope
        case .rotation: return .rotation
        case .gameRotation: return .gameRotation
        case .orientation: return .orientation
        case .magnetometer: return .magnetometer
        case .uncalibratedMagnetometer: return .uncalibratedMagnetometer
        }
    }

    /// The physical sample in `range` (the sensor's, from SensorInformation). Every i16 scales through the range,
    /// the rotation's estimated accuracy included; the vector accuracy byte is a category and stays as it is.
    public func scaled(by range: SensorRange) -> SensorValue {
        switch self {
        case .accelerometer(let v, let a), .gyroscope(let v, let a), .orientation(let v, let a), .magnetometer(let v, let a):
            return .vector(v.scaled(by: range), accuracy: a)
        case .rotation(let q, let a):
            return .quaternion(q.scaled(by: range), estimatedAccuracy: range.value(raw: a))
        case .gameRotation(let q):
            return .quaternion(q.scaled(by: range), estimatedAccuracy: nil)
        case .uncalibratedMagnetometer(let v, let b):
            return .uncalibratedVector(v.scaled(by: range), bias: b.scaled(by: range))
        }
    }

    /// The raw sample of `sensor` nearest to the physical `value` in `range`. Throws `.valueOutOfRange` when a
    /// component has no i16, `.malformed` when `value`'s shape is not the sensor's (a quaternion for the
    /// accelerometer, an accuracy for gameRotation or none for rotation).
    public init(sensor: SensorType, value: SensorValue, in range: SensorRange) throws(WearableError) {
        switch (sensor, value) {
        case (.accelerometer, .vector(let v, let a)): self = .accelerometer(try RawVector(v, in: range), accuracy: a)
        case (.gyroscope, .vector(let v, let a)): self = .gyroscope(try RawVector(v, in: range), accuracy: a)
        case (.orientation, .vector(let v, let a)): self = .orientation(try RawVector(v, in: range), accuracy: a)
        case (.magnetometer, .vector(let v, let a)): self = .magnetometer(try RawVector(v, in: range), accuracy: a)
        case (.rotation, .quaternion(let q, let a?)): self = .rotation(try RawQuaternion(q, in: range), accuracy: try range.raw(a))
        case (.gameRotation, .quaternion(let q, nil)): self = .gameRotation(try RawQuaternion(q, in: range))
        case (.uncalibratedMagnetometer, .uncalibratedVector(let v, let b)):
            self = .uncalibratedMagnetometer(try RawVector(v, in: range), bias: try RawVector(b, in: range))
        default:
            throw WearableError(.malformed, "sensor sample: a \(value.shape) is not a \(sensor) sample", category: .usage)
        }
    }

    /// Reads the sample of `sensor` from exactly `sensor.sampleLength` bytes.
    static func read(_ sensor: SensorType, _ r: inout WireReader) throws(WearableError) -> SensorSample {
        switch sensor {
        case .accelerometer: return .accelerometer(try RawVector.read(&r, "vector"), accuracy: try readAccuracy(&r))
        case .gyroscope: return .gyroscope(try RawVector.read(&r, "vector"), accuracy: try readAccuracy(&r))
        case .orientation: return .orientation(try RawVector.read(&r, "vector"), accuracy: try readAccuracy(&r))
        case .magnetometer: return .magnetometer(try RawVector.read(&r, "vector"), accuracy: try readAccuracy(&r))
        case .rotation: return .rotation(try RawQuaternion.read(&r), accuracy: try r.i16("estimated accuracy"))
        case .gameRotation: return .gameRotation(try RawQuaternion.read(&r))
        case .uncalibratedMagnetometer:
            return .uncalibratedMagnetometer(try RawVector.read(&r, "vector"), bias: try RawVector.read(&r, "bias"))
        }
    }

    private static func readAccuracy(_ r: inout WireReader) throws(WearableError) -> VectorAccuracy {
        let byte = try r.u8("accuracy")
        guard let accuracy = VectorAccuracy(rawValue: byte) else {
            throw WearableError(.malformed, "\(r.context): accuracy \(byte) is not 0...3")
        }
        return accuracy
    }

    /// Appends the sample's `sensor.sampleLength` bytes.
    func write(to w: inout WireWriter) {
        switch self {
        case .accelerometer(let v, let a), .gyroscope(let v, let a), .orientation(let v, let a), .magnetometer(let v, let a):
            v.write(to: &w)
            w.u8(a.rawValue)
        case .rotation(let q, let a):
            q.write(to: &w)
            w.i16(a)
        case .gameRotation(let q):
            q.write(to: &w)
        case .uncalibratedMagnetometer(let v, let b):
            v.write(to: &w)
            b.write(to: &w)
        }
    }
}

/// A sample in physical units: what an app uses (the SDK's Vector with VectorAccuracy, Quaternion with
/// QuaternionAccuracy).
public enum SensorValue: Sendable, Hashable {
    /// Accelerometer (g), gyroscope (degrees per second), orientation, magnetometer.
    case vector(Vector, accuracy: VectorAccuracy)
    /// Rotation (with its estimated accuracy, scaled like the components; the SDK reports it in radians) or game
    /// rotation (nil accuracy).
    case quaternion(Quaternion, estimatedAccuracy: Double?)
    /// Uncalibrated magnetometer: the field and its estimated bias.
    case uncalibratedVector(Vector, bias: Vector)

    var shape: String {
        switch self {
        case .vector: return "vector with accuracy"
        case .quaternion(_, let a): return a == nil ? "quaternion without accuracy" : "quaternion with accuracy"
        case .uncalibratedVector: return "vector with bias"
        }
    }
}
