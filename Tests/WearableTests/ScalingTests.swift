import Testing
import Wearable

/// The SDK's linear scaling and its inverse at the edges: extreme ranges, every raw value, values between steps,
/// values no i16 holds, and ranges that cannot scale.
@Suite struct ScalingTests {
    static let ranges: [SensorRange] = [
        try! SensorRange(minScaled: -16, maxScaled: 16, minRaw: -32768, maxRaw: 32767),  // accelerometer, asymmetric raw
        try! SensorRange(minScaled: -2000, maxScaled: 2000, minRaw: -32768, maxRaw: 32767),  // gyroscope
        try! SensorRange(minScaled: -1, maxScaled: 1, minRaw: -16384, maxRaw: 16384),  // quaternions
        try! SensorRange(minScaled: .min, maxScaled: .max, minRaw: 0, maxRaw: 1),  // a huge step
        try! SensorRange(minScaled: 0, maxScaled: 1, minRaw: .min, maxRaw: .max),  // a tiny step
        try! SensorRange(minScaled: 100, maxScaled: 101, minRaw: 10, maxRaw: 20),  // offsets on both sides
    ]

    @Test func theSheetsFormula() throws {
        let accelerometer = Self.ranges[0]
        #expect(accelerometer.value(raw: -32768) == -16)
        #expect(accelerometer.value(raw: 32767) == 16)
        #expect(accelerometer.value(raw: 0) == 1_048_576.0 / 65535 - 16)  // not 0: the raw range is asymmetric
        let quaternion = Self.ranges[2]
        #expect(quaternion.value(raw: 16384) == 1 && quaternion.value(raw: -16384) == -1 && quaternion.value(raw: 0) == 0)
        #expect(quaternion.value(raw: 8192) == 0.5 && quaternion.resolution == 1.0 / 16384)
        // Beyond the raw range, along the same line.
        #expect(quaternion.value(raw: .max) == 32767.0 / 16384 && quaternion.value(raw: .min) == -2)
        let offset = Self.ranges[5]
        #expect(offset.value(raw: 10) == 100 && offset.value(raw: 20) == 101 && offset.value(raw: 15) == 100.5)
        #expect(offset.value(raw: 0) == 99)
        let huge = Self.ranges[3]
        #expect(huge.value(raw: 0) == -32768 && huge.value(raw: 1) == 32767 && huge.value(raw: 2) == 98302)
    }

    /// Every one of the 65536 raw values comes back from its scaled value, in every range.
    @Test(arguments: ranges) func everyRawValueRoundTrips(range: SensorRange) throws {
        var previous = -Double.infinity
        for raw in Int16.min...Int16.max {
            let value = range.value(raw: raw)
            #expect(value.isFinite)
            #expect(value > previous, "monotonic at \(raw)")
            previous = value
            let back = try range.raw(value)
            if back != raw { Issue.record("\(range): raw \(raw) -> \(value) -> \(back)"); return }
        }
    }

    @Test func valuesBetweenStepsRoundToTheNearest() throws {
        let q = Self.ranges[2]
        let step = q.resolution
        #expect(try q.raw(0.4 * step) == 0)
        #expect(try q.raw(0.6 * step) == 1)
        #expect(try q.raw(-0.6 * step) == -1)
        #expect(try q.raw(1.0) == 16384)
        #expect(try q.raw(-1.0) == -16384)
        // The nearest raw value is clamped by nothing but the i16: values beyond the range but inside it are fine.
        #expect(try q.raw(1.999) == 32752)
        #expect(try q.raw(32767.0 / 16384) == .max)
        #expect(try q.raw(-2) == .min)
    }

    @Test func valuesNoI16HoldsAreRefused() throws {
        let q = Self.ranges[2]
        for bad in [2.0, -2.0001, 1e300, -.infinity, .infinity, .nan] {
            #expect(throws: WearableError(.valueOutOfRange, "")) { try q.raw(bad) }
        }
        let error = try #require(throws: WearableError.self) { try q.raw(.nan) }
        #expect(error.category == .usage && !error.message.contains("\n"))
        // A whole sample with one bad component is refused, not clamped.
        #expect(throws: WearableError(.valueOutOfRange, "")) {
            try RawVector(Vector(x: 0, y: 0, z: 3), in: q)
        }
    }

    @Test func rangesThatCannotScaleAreRefused() throws {
        for (a, b, c, d) in [(0, 0, -1, 1), (1, -1, -1, 1), (-1, 1, 5, 5), (-1, 1, 6, 5)] as [(Int16, Int16, Int16, Int16)] {
            #expect(throws: WearableError(.invalidRange, "")) {
                try SensorRange(minScaled: a, maxScaled: b, minRaw: c, maxRaw: d)
            }
        }
    }

    /// Samples scale component by component; each shape comes back from its scaled value.
    @Test func samplesScaleAndComeBack() async throws {
        let q = Self.ranges[2]
        let rotation = SensorSample.rotation(RawQuaternion(x: -16384, y: 0, z: 8192, w: 16384), accuracy: 164)
        #expect(rotation.scaled(by: q) == .quaternion(Quaternion(x: -1, y: 0, z: 0.5, w: 1), estimatedAccuracy: 164.0 / 16384))
        #expect(try SensorSample(sensor: .rotation, value: rotation.scaled(by: q), in: q) == rotation)
        let uncalibrated = SensorSample.uncalibratedMagnetometer(RawVector(x: 1, y: 2, z: 3), bias: RawVector(x: -1, y: -2, z: -3))
        #expect(try SensorSample(sensor: .uncalibratedMagnetometer, value: uncalibrated.scaled(by: q), in: q) == uncalibrated)
        var rng = TestRandom(seed: 42)
        for _ in 0..<2000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            let range = rng.range()
            for sensor in SensorType.allCases {
                let sample = rng.sample(of: sensor)
                #expect(try SensorSample(sensor: sensor, value: sample.scaled(by: range), in: range) == sample)
            }
        }
    }

    /// A value of the wrong shape for the sensor is refused.
    @Test func shapesMustMatchTheSensor() throws {
        let q = Self.ranges[2]
        let vector = SensorValue.vector(Vector(x: 0, y: 0, z: 0), accuracy: .high)
        let quaternion = SensorValue.quaternion(Quaternion(x: 0, y: 0, z: 0, w: 1), estimatedAccuracy: nil)
        let withAccuracy = SensorValue.quaternion(Quaternion(x: 0, y: 0, z: 0, w: 1), estimatedAccuracy: 0.1)
        for (sensor, value) in [(SensorType.accelerometer, quaternion), (.rotation, quaternion), (.gameRotation, withAccuracy),
                                (.uncalibratedMagnetometer, vector), (.gyroscope, withAccuracy)] {
            #expect(throws: WearableError(.malformed, ""), "\(sensor)") { try SensorSample(sensor: sensor, value: value, in: q) }
        }
    }

    @Test func recordsScaleWithTheirSensorsRange() throws {
        let info = TestVectorTests.sensorInformation
        let record = SensorRecord(timestamp: 1, sample: .gyroscope(RawVector(x: -32768, y: 32767, z: 0), accuracy: .medium))
        #expect(try record.value(using: info) == .vector(Vector(x: -2000, y: 2000, z: 131_072_000.0 / 65535 - 2000), accuracy: .medium))
        let unlisted = SensorRecord(timestamp: 1, sample: .magnetometer(RawVector(x: 0, y: 0, z: 0), accuracy: .low))
        #expect(throws: WearableError(.sensorNotListed, "")) { try unlisted.value(using: info) }
    }
}
