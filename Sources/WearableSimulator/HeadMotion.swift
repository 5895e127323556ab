import Foundation
import Support
import Transport
import Wearable

/// A motion model of a head: a script of segments (stillness, turns, nods, shakes), seeded or written out, from which
/// every sensor's sample follows, so they agree with each other.
///
/// The head's orientation is `R = Rz(yaw) · Ry(pitch)` (body frame: x forward, y left, z up; yaw turns and shakes
/// about the vertical, pitch nods about the left axis). Then
/// - rotation = the quaternion of R (heading relative to magnetic north, `headingOffset` added to yaw), game rotation
///   = the quaternion of R without that offset (its heading starts at 0);
/// - gyroscope = the body-frame angular velocity, the exact derivative of R: (-yaw'·sin pitch, pitch', yaw'·cos pitch)
///   in degrees per second;
/// - accelerometer = gravity seen from the head, Rᵀ·(0, 0, 1 g) = (-sin pitch, 0, cos pitch) (the head's small linear
///   accelerations are not modelled), so |accel| = 1 g always.
/// A nod segment ends with a headNod gesture, a shake with a headShake. Pure value; times in seconds since boot.
public struct HeadMotion: Sendable, Hashable {
    /// One piece of the script.
    public enum Movement: Sendable, Hashable {
        /// The head holds still.
        case still
        /// The head turns by `degrees` of yaw (positive: to the left), smoothly.
        case turn(degrees: Double)
        /// `count` nods, pitching down by `degrees` and back.
        case nod(degrees: Double, count: Int)
        /// `count` shakes, yawing ±`degrees`.
        case shake(degrees: Double, count: Int)
    }

    public struct Segment: Sendable, Hashable {
        public var movement: Movement
        /// Seconds (> 0).
        public var duration: Double
        public init(_ movement: Movement, duration: Double) {
            self.movement = movement
            self.duration = max(0.001, duration)
        }
    }

    /// The head's state at one time.
    public struct Pose: Sendable, Hashable {
        /// Radians.
        public var yaw: Double, pitch: Double
        /// Radians per second.
        public var yawRate: Double, pitchRate: Double
    }

    public let segments: [Segment]
    private let starts: [Double]
    private let startYaws: [Double]
    /// Added to the yaw of the rotation sensor (magnetic heading), radians.
    public var headingOffset: Double

    /// A written-out script (after its end the head holds still).
    public init(script: [Segment], headingOffset: Double = 0.3) {
        segments = script
        var t = 0.0, yaw = 0.0
        var starts: [Double] = [], yaws: [Double] = []
        for s in script {
            starts.append(t)
            yaws.append(yaw)
            t += s.duration
            if case let .turn(d) = s.movement { yaw += d * .pi / 180 }
        }
        self.starts = starts
        self.startYaws = yaws
        self.headingOffset = headingOffset
    }

    /// A seeded script covering `seconds`: stillness between turns, nods and shakes.
    public init(seed: UInt64, seconds: Double = 3600) {
        var rng = SeededRandom(seed: seed)
        var script: [Segment] = []
        var t = 0.0
        var yaw = 0.0
        while t < seconds {
            script.append(Segment(.still, duration: 0.5 + 1.5 * rng.nextUnit()))
            let pick = rng.nextUnit()
            let segment: Segment
            if pick < 0.4 {
                var d = 30 + 60 * rng.nextUnit()
                if rng.nextUnit() < 0.5 || abs(yaw + d) > 120 { d = -d }
                if abs(yaw + d) > 120 { d = -d / 2 }
                yaw += d
                segment = Segment(.turn(degrees: d), duration: 0.8 + rng.nextUnit())
            } else if pick < 0.7 {
                segment = Segment(.nod(degrees: 15 + 10 * rng.nextUnit(), count: 2), duration: 1.0 + 0.4 * rng.nextUnit())
            } else {
                segment = Segment(.shake(degrees: 20 + 10 * rng.nextUnit(), count: 2), duration: 1.2 + 0.4 * rng.nextUnit())
            }
            script.append(segment)
            t += script[script.count - 2].duration + segment.duration
        }
        self.init(script: script, headingOffset: 2 * .pi * rng.nextUnit() - .pi)
    }

    /// The segment index at `t` (nil after the script).
    private func index(at t: Double) -> Int? {
        guard let first = starts.first, t >= first else { return segments.isEmpty ? nil : 0 }
        var lo = 0, hi = starts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if starts[mid] <= t { lo = mid } else { hi = mid - 1 }
        }
        return t < starts[lo] + segments[lo].duration ? lo : nil
    }

    /// The pose at `t` seconds.
    public func pose(at t: Double) -> Pose {
        guard let i = index(at: t) else {
            let yaw = (startYaws.last ?? 0) + {
                if case let .turn(d)? = segments.last?.movement { return d * .pi / 180 }
                return 0
            }()
            return Pose(yaw: segments.isEmpty ? 0 : yaw, pitch: 0, yawRate: 0, pitchRate: 0)
        }
        let s = segments[i]
        let u = (t - starts[i]) / s.duration
        let base = startYaws[i]
        switch s.movement {
        case .still:
            return Pose(yaw: base, pitch: 0, yawRate: 0, pitchRate: 0)
        case let .turn(d):
            let a = d * .pi / 180
            return Pose(yaw: base + a * (1 - cos(.pi * u)) / 2, pitch: 0, yawRate: a * .pi / 2 * sin(.pi * u) / s.duration, pitchRate: 0)
        case let .nod(d, n):
            // Pitch down is negative pitch about the left axis... the sign does not matter for consistency; down = +.
            let a = d * .pi / 180, k = Double(n)
            return Pose(yaw: base, pitch: a * (1 - cos(2 * .pi * k * u)) / 2, yawRate: 0,
                        pitchRate: a * .pi * k * sin(2 * .pi * k * u) / s.duration)
        case let .shake(d, n):
            let a = d * .pi / 180, k = Double(n)
            let f = sin(2 * .pi * k * u) * sin(.pi * u)
            let df = 2 * .pi * k * cos(2 * .pi * k * u) * sin(.pi * u) + .pi * sin(2 * .pi * k * u) * cos(.pi * u)
            return Pose(yaw: base + a * f, pitch: 0, yawRate: a * df / s.duration, pitchRate: 0)
        }
    }

    /// The gestures the motion makes in `(from, to]` seconds: a nod segment's end is a headNod, a shake's a headShake.
    public func gestures(after from: Double, through to: Double) -> [(gesture: GestureType, time: Double)] {
        var out: [(GestureType, Double)] = []
        guard to > from else { return out }
        var i = max(0, (index(at: from) ?? starts.count) - 1)
        if starts.isEmpty { return out }
        // Walk from the segment before `from` (its end may be inside the window) until segments start after `to`.
        i = min(i, starts.count - 1)
        while i < segments.count, starts[i] <= to {
            let end = starts[i] + segments[i].duration
            if end > from, end <= to {
                switch segments[i].movement {
                case .nod: out.append((.headNod, end))
                case .shake: out.append((.headShake, end))
                default: break
                }
            }
            i += 1
        }
        return out
    }

    /// Game rotation: the quaternion of Rz(yaw)·Ry(pitch) (x, y, z, w).
    public static func quaternion(yaw: Double, pitch: Double) -> Quaternion {
        let sz = sin(yaw / 2), cz = cos(yaw / 2), sy = sin(pitch / 2), cy = cos(pitch / 2)
        return Quaternion(x: -sz * sy, y: cz * sy, z: cy * sz, w: cz * cy)
    }

    /// Every sensor's physical sample at `t`.
    public func sample(_ sensor: SensorType, at t: Double) -> SensorValue {
        let p = pose(at: t)
        let degrees = 180 / Double.pi
        switch sensor {
        case .accelerometer:
            return .vector(Vector(x: -sin(p.pitch), y: 0, z: cos(p.pitch)), accuracy: .high)
        case .gyroscope:
            return .vector(Vector(x: -p.yawRate * sin(p.pitch) * degrees, y: p.pitchRate * degrees, z: p.yawRate * cos(p.pitch) * degrees),
                           accuracy: .high)
        case .rotation:
            return .quaternion(Self.quaternion(yaw: p.yaw + headingOffset, pitch: p.pitch), estimatedAccuracy: 0.05)
        case .gameRotation:
            return .quaternion(Self.quaternion(yaw: p.yaw, pitch: p.pitch), estimatedAccuracy: nil)
        case .orientation:
            return .vector(Vector(x: p.pitch * degrees, y: 0, z: p.yaw * degrees), accuracy: .high)
        case .magnetometer:
            let h = p.yaw + headingOffset
            return .vector(Vector(x: 20 * cos(h), y: -20 * sin(h), z: -40), accuracy: .medium)
        case .uncalibratedMagnetometer:
            let h = p.yaw + headingOffset
            return .uncalibratedVector(Vector(x: 20 * cos(h) + 5, y: -20 * sin(h) - 3, z: -38), bias: Vector(x: 5, y: -3, z: 2))
        }
    }
}
