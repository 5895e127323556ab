#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Yaw, pitch and roll in degrees (docs/wearable.md §4.1): the intrinsic Z-Y′-X″ (Tait-Bryan) angles of a rotation
/// quaternion, `R = Rz(yaw) · Ry(pitch) · Rx(roll)`, in the device's body frame (x forward, y left, z up, as the
/// simulated head). Yaw turns about the vertical (positive: to the left), pitch about the left axis (positive: the
/// nose goes down, as in a nod), roll about the forward axis (positive: the right ear goes up). Ranges: yaw and roll
/// (-180, 180], pitch [-90, 90]. At pitch ±90° (gimbal lock; within about 0.08°) yaw and roll turn about the same
/// axis and only their difference is defined: roll is then 0 and yaw carries the whole turn.
public struct Orientation: Sendable, Hashable {
    public var yaw: Double
    public var pitch: Double
    public var roll: Double

    public init(yaw: Double, pitch: Double, roll: Double) {
        (self.yaw, self.pitch, self.roll) = (yaw, pitch, roll)
    }

    /// |sin pitch| at or above this is gimbal lock (pitch within about 0.08° of ±90°).
    public static let gimbalLockSine = 1 - 1e-6

    /// The angles of `q` (x, y, z, w; Hamilton convention, rotating body-frame vectors into the reference frame),
    /// normalised first (a scaled 16-bit quaternion is only nearly unit). Nil for a quaternion of zero length or
    /// with a non-finite component.
    public init?(_ q: Quaternion) {
        let n = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).squareRoot()
        guard n.isFinite, n > 1e-9 else { return nil }
        let (x, y, z, w) = (q.x / n, q.y / n, q.z / n, q.w / n)
        let degrees = 180 / Double.pi
        let sinPitch = max(-1, min(1, 2 * (w * y - z * x)))
        if abs(sinPitch) >= Self.gimbalLockSine {
            // R = Rz(yaw)·Ry(±90°): only yaw ∓ roll is defined; roll = 0 gives yaw = ∓2·atan2(x, w).
            let sign: Double = sinPitch > 0 ? 1 : -1
            self.init(yaw: Self.wrapped(-sign * 2 * atan2(x, w) * degrees), pitch: sign * 90, roll: 0)
            return
        }
        let yaw = atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        let roll = atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
        self.init(yaw: Self.wrapped(yaw * degrees), pitch: asin(sinPitch) * degrees, roll: Self.wrapped(roll * degrees))
    }

    /// The quaternion of these angles (unit; w ≥ 0 is not enforced): the inverse of `init?(_:)` away from gimbal lock.
    public var quaternion: Quaternion {
        let r = Double.pi / 360  // half angles, in radians
        let (cy, sy) = (cos(yaw * r), sin(yaw * r))
        let (cp, sp) = (cos(pitch * r), sin(pitch * r))
        let (cr, sr) = (cos(roll * r), sin(roll * r))
        return Quaternion(x: sr * cp * cy - cr * sp * sy,
                          y: cr * sp * cy + sr * cp * sy,
                          z: cr * cp * sy - sr * sp * cy,
                          w: cr * cp * cy + sr * sp * sy)
    }

    /// `degrees` in (-180, 180].
    public static func wrapped(_ degrees: Double) -> Double {
        var d = degrees.truncatingRemainder(dividingBy: 360)
        if d <= -180 { d += 360 } else if d > 180 { d -= 360 }
        return d == 0 ? 0 : d  // no -0
    }

    /// The smallest difference `a - b` of two angles, in (-180, 180].
    public static func difference(_ a: Double, _ b: Double) -> Double { wrapped(a - b) }
}

extension SensorValue {
    /// Yaw, pitch and roll of a rotation or game rotation sample; nil for other sensors.
    public var orientation: Orientation? {
        if case let .quaternion(q, _) = self { return Orientation(q) }
        return nil
    }
}
