import Foundation
import Testing
import Transport
import Wearable
import WearableLink
import WearableSession
import WearableSimulator

/// Quaternion helpers for the checks (x, y, z, w).
private func multiply(_ a: Quaternion, _ b: Quaternion) -> Quaternion {
    Quaternion(x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
               y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
               z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w,
               w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z)
}

private func conjugate(_ q: Quaternion) -> Quaternion { Quaternion(x: -q.x, y: -q.y, z: -q.z, w: q.w) }

/// The body-frame angular velocity (degrees per second) that turns `q1` into `q2` in `dt` seconds.
private func angularVelocity(from q1: Quaternion, to q2: Quaternion, dt: Double) -> Vector {
    var d = multiply(conjugate(q1), q2)
    if d.w < 0 { d = Quaternion(x: -d.x, y: -d.y, z: -d.z, w: -d.w) }
    let s = 2 / dt * 180 / Double.pi
    return Vector(x: d.x * s, y: d.y * s, z: d.z * s)
}

private func distance(_ a: Vector, _ b: Vector) -> Double { norm(Vector(x: a.x - b.x, y: a.y - b.y, z: a.z - b.z)) }

@Suite(.timeLimit(.minutes(1))) struct MotionTests {
    /// The model itself, exact values: the gyroscope is the derivative of the rotation, the accelerometer sees 1 g.
    @Test(arguments: [UInt64(1), 7, 1234])
    func theModelsSensorsAgree(seed: UInt64) async {
        let motion = HeadMotion(seed: seed, seconds: 60)
        var moving = 0
        for step in 0..<3000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            let t = Double(step) * 0.02
            let h = 0.0005
            guard case let .vector(gyro, _) = motion.sample(.gyroscope, at: t),
                  case let .vector(accel, _) = motion.sample(.accelerometer, at: t),
                  case let .quaternion(q1, _) = motion.sample(.gameRotation, at: t - h),
                  case let .quaternion(q2, _) = motion.sample(.gameRotation, at: t + h),
                  case let .quaternion(r, _) = motion.sample(.rotation, at: t),
                  case let .quaternion(g, _) = motion.sample(.gameRotation, at: t)
            else {
                Issue.record("a sample of the wrong shape")
                return
            }
            #expect(abs(norm(accel) - 1) < 1e-9)
            #expect(distance(gyro, angularVelocity(from: q1, to: q2, dt: 2 * h)) < 0.2, "t = \(t)")
            // Rotation is game rotation turned by the constant heading offset about the vertical.
            let offset = multiply(r, conjugate(g))
            #expect(abs(offset.x) < 1e-9 && abs(offset.y) < 1e-9)
            #expect(abs(2 * atan2(offset.z, offset.w) - motion.headingOffset) < 1e-9 || abs(abs(2 * atan2(offset.z, offset.w) - motion.headingOffset) - 2 * .pi) < 1e-9)
            if norm(gyro) > 10 { moving += 1 }
        }
        #expect(moving > 300, "the seeded head moves")
        #expect(!motion.gestures(after: 0, through: 60).isEmpty)
    }

    @Test func aNodMakesAHeadNodAndAShakeAHeadShake() {
        let motion = HeadMotion(script: [.init(.still, duration: 1), .init(.nod(degrees: 20, count: 2), duration: 1.2),
                                         .init(.turn(degrees: 45), duration: 1), .init(.still, duration: 0.5),
                                         .init(.shake(degrees: 25, count: 2), duration: 1.4)])
        let made = motion.gestures(after: 0, through: 10)
        #expect(made.map(\.gesture) == [.headNod, .headShake])
        #expect(made.count == 2 && abs(made[0].time - 2.2) < 1e-9 && abs(made[1].time - 5.1) < 1e-9)
        #expect(motion.gestures(after: 2.2, through: 5.0).isEmpty)
        #expect(abs(motion.pose(at: 3.4).yaw - 45 * Double.pi / 180) < 1e-9, "the turn holds")
        #expect(abs(motion.pose(at: 9).yaw - 45 * Double.pi / 180) < 1e-9, "and stays after the script")
        #expect(abs(motion.pose(at: 1.3).pitch - 20 * Double.pi / 180) < 1e-9 && motion.pose(at: 1.3).yaw == 0, "a nod pitches")
    }

    /// Through the session, quantized as the device sends them: four sensors at 20 ms and the gestures.
    @Test func streamedSamplesAgreeAndTheNodIsAGesture() async throws {
        let motion = HeadMotion(script: [.init(.still, duration: 1), .init(.nod(degrees: 20, count: 2), duration: 1.2),
                                         .init(.still, duration: 1), .init(.shake(degrees: 25, count: 2), duration: 1.4),
                                         .init(.still, duration: 1)])
        let f = try Fixture(profile: roomyProfile(motion: motion))
        try await f.session.open()
        let readings = await f.session.sensorReadings()
        let gestures = await f.session.gestureReadings()
        try await f.session.configureSensors { c in
            for s in [SensorType.accelerometer, .gyroscope, .rotation, .gameRotation] { c.enable(sensor: s, at: ._20ms) }
        }
        try await f.session.configureGestures { c in
            c.set(gesture: .headNod, enabled: true)
            c.set(gesture: .headShake, enabled: true)
        }
        let ticks = 140  // 5.6 s
        async let samples = collect(readings, 8 * ticks)
        async let made = collect(gestures, 2)
        await f.pump(ticks: ticks)
        let r = await samples
        let g = await made
        #expect(g.map(\.gesture) == [.headNod, .headShake])
        #expect(g.map(\.deviceTime) == [2200, 4600])

        func series(_ s: SensorType) -> [Int64: SensorValue] {
            Dictionary(r.filter { $0.sensor == s }.map { ($0.deviceTime, $0.value) }, uniquingKeysWith: { a, _ in a })
        }
        let accel = series(.accelerometer), gyro = series(.gyroscope), game = series(.gameRotation), rot = series(.rotation)
        #expect(accel.count == 2 * ticks && gyro.count == 2 * ticks && game.count == 2 * ticks && rot.count == 2 * ticks)
        var compared = 0, peak = 0.0
        for t in stride(from: Int64(20), to: Int64(40 * ticks), by: 20) {
            guard let a = accel[t]?.vector, let w1 = gyro[t]?.vector, let w2 = gyro[t + 20]?.vector,
                  let q1 = game[t]?.quaternion, let q2 = game[t + 20]?.quaternion else { continue }
            let still = t < 1000 || (2200..<3200).contains(t) || t > 4600
            if still {
                #expect(abs(norm(a) - 1) < 0.002, "|accel| at \(t) ms: \(norm(a))")
                #expect(norm(w1) < 0.1, "gyro at \(t) ms")
            }
            let mean = Vector(x: (w1.x + w2.x) / 2, y: (w1.y + w2.y) / 2, z: (w1.z + w2.z) / 2)
            let derived = angularVelocity(from: q1, to: q2, dt: 0.02)
            #expect(distance(mean, derived) < 2.5, "gyro at \(t) ms: \(mean) vs the rotation's derivative \(derived)")
            peak = max(peak, norm(mean))
            compared += 1
        }
        #expect(compared > 250)
        #expect(peak > 50, "the nod and the shake turn the head fast")
        // The nod pitches: the accelerometer's x leaves 0 while the head is down.
        #expect(accel[1300]?.vector.map { abs($0.x) > 0.3 } == true)
        await f.shutdown()
    }
    /// Yaw, pitch and roll of the streamed rotation and game rotation against the head model's known pose over a
    /// scripted turn, nod and shake: within 0.5° (the 16-bit quaternion's step is about 0.007°).
    @Test func orientationFollowsTheHead() async throws {
        let motion = HeadMotion(script: [.init(.still, duration: 0.5), .init(.turn(degrees: 60), duration: 1),
                                         .init(.nod(degrees: 20, count: 2), duration: 1.2), .init(.shake(degrees: 25, count: 2), duration: 1.4),
                                         .init(.turn(degrees: -150), duration: 1), .init(.still, duration: 0.5)])
        let f = try Fixture(profile: roomyProfile(motion: motion))
        try await f.session.open()
        let readings = await f.session.sensorReadings()
        try await f.session.configureSensors { c in
            for s in [SensorType.rotation, .gameRotation] { c.enable(sensor: s, at: ._20ms) }
        }
        let ticks = 140  // 5.6 s
        async let samples = collect(readings, 4 * ticks)
        await f.pump(ticks: ticks)
        let r = await samples
        #expect(r.count == 4 * ticks)
        let degrees = 180 / Double.pi
        var worst = 0.0, yaws: [Double] = [], pitches: [Double] = []
        for reading in r {
            guard let o = reading.orientation else {
                Issue.record("no orientation for \(reading.sensor)")
                continue
            }
            let pose = motion.pose(at: Double(reading.deviceTime) / 1000)
            let heading = reading.sensor == .rotation ? motion.headingOffset : 0
            let errors = [Orientation.difference(o.yaw, (pose.yaw + heading) * degrees), o.pitch - pose.pitch * degrees, o.roll]
            worst = max(worst, errors.map(abs).max()!)
            if reading.sensor == .gameRotation { yaws.append(o.yaw); pitches.append(o.pitch) }
        }
        #expect(worst <= 0.5, "worst error \(worst)°")
        #expect(worst > 0, "quantized on the way")
        // The script moves the head: yaw through +60 and back past -60 (and a shake), pitch down 20.
        #expect(yaws.max()! > 59 && yaws.min()! < -85 && pitches.max()! > 19.5)
        await f.shutdown()
    }
}
