import Foundation
import Testing
import Wearable

/// Yaw, pitch and roll from hand-computed quaternions (docs/wearable.md §4.1).
@Suite struct OrientationTests {
    static let h = 0.5.squareRoot()  // cos 45° = sin 45°

    func expectAngles(_ q: Quaternion, yaw: Double, pitch: Double, roll: Double, within tolerance: Double = 1e-9,
                      sourceLocation: SourceLocation = #_sourceLocation) {
        guard let o = Orientation(q) else {
            Issue.record("no orientation for \(q)", sourceLocation: sourceLocation)
            return
        }
        #expect(abs(Orientation.difference(o.yaw, yaw)) <= tolerance, "yaw \(o.yaw), expected \(yaw)", sourceLocation: sourceLocation)
        #expect(abs(o.pitch - pitch) <= tolerance, "pitch \(o.pitch), expected \(pitch)", sourceLocation: sourceLocation)
        #expect(abs(Orientation.difference(o.roll, roll)) <= tolerance, "roll \(o.roll), expected \(roll)", sourceLocation: sourceLocation)
    }

    @Test func identityIsZero() {
        let o = Orientation(Quaternion(x: 0, y: 0, z: 0, w: 1))
        #expect(o == Orientation(yaw: 0, pitch: 0, roll: 0))
    }

    /// A turn about z by 90°: (0, 0, sin 45°, cos 45°).
    @Test func ninetyDegreesOfYaw() {
        expectAngles(Quaternion(x: 0, y: 0, z: Self.h, w: Self.h), yaw: 90, pitch: 0, roll: 0)
        expectAngles(Quaternion(x: 0, y: 0, z: -Self.h, w: Self.h), yaw: -90, pitch: 0, roll: 0)
        // 180°: (0, 0, 1, 0) is +180 (the range is (-180, 180]).
        #expect(Orientation(Quaternion(x: 0, y: 0, z: 1, w: 0))?.yaw == 180)
    }

    /// ±90° about y is gimbal lock: pitch exactly ±90, roll 0, yaw carries the turn.
    @Test func plusAndMinusNinetyDegreesOfPitch() {
        #expect(Orientation(Quaternion(x: 0, y: Self.h, z: 0, w: Self.h)) == Orientation(yaw: 0, pitch: 90, roll: 0))
        #expect(Orientation(Quaternion(x: 0, y: -Self.h, z: 0, w: Self.h)) == Orientation(yaw: 0, pitch: -90, roll: 0))
        // Rz(30°)·Ry(90°) = (-sin 15°·h, cos 15°·h, sin 15°·h, cos 15°·h): yaw 30.
        let (s, c) = (sin(15 * Double.pi / 180), cos(15 * Double.pi / 180))
        expectAngles(Quaternion(x: -s * Self.h, y: c * Self.h, z: s * Self.h, w: c * Self.h), yaw: 30, pitch: 90, roll: 0)
        // Rz(30°)·Ry(-90°) = (sin 15°·h, -cos 15°·h, sin 15°·h, cos 15°·h).
        expectAngles(Quaternion(x: s * Self.h, y: -c * Self.h, z: s * Self.h, w: c * Self.h), yaw: 30, pitch: -90, roll: 0)
        // Rz(30°)·Ry(90°)·Rx(10°) is the same rotation as Rz(20°)·Ry(90°): only yaw - roll is defined, roll = 0.
        let locked = Orientation(yaw: 30, pitch: 90, roll: 10).quaternion
        expectAngles(locked, yaw: 20, pitch: 90, roll: 0, within: 1e-6)
    }

    /// Rz(90°)·Rx(90°) = (cos 45°)² (1 + k)(1 + i) = (0.5, 0.5, 0.5, 0.5); and Rz(90°)·Ry(30°).
    @Test func combined() {
        expectAngles(Quaternion(x: 0.5, y: 0.5, z: 0.5, w: 0.5), yaw: 90, pitch: 0, roll: 90)
        let (s15, c15) = (sin(15 * Double.pi / 180), cos(15 * Double.pi / 180))
        expectAngles(Quaternion(x: -Self.h * s15, y: Self.h * s15, z: c15 * Self.h, w: Self.h * c15), yaw: 90, pitch: 30, roll: 0)
        // The docs' worked example: the rotation record of §3.4, (0, 0, 0.5, 0.866028) → yaw 60.000° (59.99985°).
        expectAngles(Quaternion(x: 0, y: 0, z: 0.5, w: 0.866028), yaw: 60, pitch: 0, roll: 0, within: 0.001)
    }

    /// -q is the same rotation, and the length does not matter (scaled samples are only nearly unit).
    @Test func signAndLengthDoNotMatter() {
        let q = Quaternion(x: 0.1, y: -0.3, z: 0.4, w: 0.8)
        let o = Orientation(q)!
        expectAngles(Quaternion(x: -0.1, y: 0.3, z: -0.4, w: -0.8), yaw: o.yaw, pitch: o.pitch, roll: o.roll, within: 1e-9)
        expectAngles(Quaternion(x: 0.2, y: -0.6, z: 0.8, w: 1.6), yaw: o.yaw, pitch: o.pitch, roll: o.roll, within: 1e-9)
        #expect(Orientation(Quaternion(x: 0, y: 0, z: 0, w: 0)) == nil)
        #expect(Orientation(Quaternion(x: .nan, y: 0, z: 0, w: 1)) == nil)
    }

    /// Angles → quaternion → angles, over the whole range away from gimbal lock (seeded).
    @Test func anglesRoundTrip() {
        var random = TestRandom(seed: 0x9E37_79B9_7F4A_7C15)
        func unit() -> Double { Double.random(in: 0..<1, using: &random) }
        for _ in 0..<2000 {
            let a = Orientation(yaw: 360 * unit() - 179.99, pitch: 178 * unit() - 89, roll: 360 * unit() - 179.99)
            expectAngles(a.quaternion, yaw: a.yaw, pitch: a.pitch, roll: a.roll, within: 1e-7)
        }
    }

    @Test func onlyQuaternionsHaveAnOrientation() {
        #expect(SensorValue.quaternion(Quaternion(x: 0, y: 0, z: Self.h, w: Self.h), estimatedAccuracy: nil).orientation?.yaw ?? 0 > 89.999)
        #expect(SensorValue.vector(Vector(x: 0, y: 0, z: 1), accuracy: .high).orientation == nil)
    }
}
