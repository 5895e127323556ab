import Testing
import Wearable

/// Payloads written out by hand from the sheet's layouts (docs/wearable.md shows the same bytes), decoded to the
/// values they must mean and encoded back to the same bytes.
@Suite struct TestVectorTests {
    static let accelerometerRange = try! SensorRange(minScaled: -16, maxScaled: 16, minRaw: -32768, maxRaw: 32767)
    static let gyroscopeRange = try! SensorRange(minScaled: -2000, maxScaled: 2000, minRaw: -32768, maxRaw: 32767)
    static let rotationRange = try! SensorRange(minScaled: -1, maxScaled: 1, minRaw: -16384, maxRaw: 16384)

    /// Accelerometer, gyroscope, rotation and game rotation, as docs/wearable.md shows them.
    static let sensorInformationHex = """
        00 ff f0 00 10 80 00 7f ff 00 1f 07
        01 f8 30 07 d0 80 00 7f ff 00 1c 07
        02 ff ff 00 01 c0 00 40 00 00 18 0a
        03 ff ff 00 01 c0 00 40 00 00 18 08
        """
    static let sensorInformation = try! SensorInformation([
        .init(sensor: .accelerometer, range: accelerometerRange, availablePeriods: Set(SamplePeriod.allCases)),
        .init(sensor: .gyroscope, range: gyroscopeRange, availablePeriods: [._80ms, ._40ms, ._20ms]),
        .init(sensor: .rotation, range: rotationRange, availablePeriods: [._40ms, ._20ms]),
        .init(sensor: .gameRotation, range: rotationRange, availablePeriods: [._40ms, ._20ms]),
    ])

    @Test func deviceInformation() throws {
        let wire = bytes("01 02 40 20 01 | 00 00 00 0f | 00 00 00 0f | 28 | 00 b4 | 03 | 00 05")
        let expected = DeviceInformation(
            majorVersion: 1, minorVersion: 2, productID: 0x4020, variant: 1,
            availableSensors: [.accelerometer, .gyroscope, .rotation, .gameRotation],
            availableGestures: [.singleTap, .doubleTap, .headNod, .headShake], transmissionPeriod: 40,
            maxPayloadPerTransmissionPeriod: 180, maxActiveSensors: 3,
            status: DeviceStatus(pairingEnabled: true, alreadyPaired: true))
        #expect(wire.count == DeviceInformation.length)
        #expect(try DeviceInformation(decoding: wire) == expected)
        #expect(expected.encoded() == wire, "\(hex(expected.encoded()))")
        // Each status bit in its place, and the masks' highest bits.
        let status = DeviceStatus(pairingEnabled: false, secureBLEPairingRequired: true, alreadyPaired: false, serviceSuspended: true)
        #expect(status.rawValue == 0x000A)
        let sparse = bytes("00 00 00 00 00 | 00 00 00 40 | 00 00 00 08 | 00 | ff ff | 00 | 00 0a")
        let decoded = try DeviceInformation(decoding: sparse)
        #expect(decoded.availableSensors == [.uncalibratedMagnetometer] && decoded.availableGestures == [.headShake])
        #expect(decoded.status == status && decoded.maxPayloadPerTransmissionPeriod == 0xFFFF)
    }

    @Test func sensorInformation() throws {
        let wire = bytes(Self.sensorInformationHex)
        let decoded = try SensorInformation(decoding: wire)
        #expect(decoded == Self.sensorInformation)
        #expect(Self.sensorInformation.encoded() == wire, "\(hex(Self.sensorInformation.encoded()))")
        #expect(decoded.sensors == [.accelerometer, .gyroscope, .rotation, .gameRotation])
        #expect(decoded[.rotation]?.sampleLength == 10 && decoded[.gameRotation]?.sampleLength == 8)
        #expect(decoded[.magnetometer] == nil)
        #expect(try SensorInformation(decoding: []).entries.isEmpty)
    }

    @Test func sensorConfiguration() throws {
        let wire = bytes("00 00 14 | 01 00 14 | 02 00 00 | 03 00 00")
        var expected = try SensorConfiguration(disabled: [.accelerometer, .gyroscope, .rotation, .gameRotation])
        expected.enable(sensor: .accelerometer, at: ._20ms)
        expected.enable(sensor: .gyroscope, at: ._20ms)
        #expect(try SensorConfiguration(decoding: wire) == expected)
        #expect(expected.encoded() == wire)
        // Milliseconds in configurations: 320 ms is 01 40, not the bit position 0.
        var slow = try SensorConfiguration(decoding: wire)
        slow.setEnabledSensorsSamplePeriod(._320ms)
        #expect(slow.encoded() == bytes("00 01 40 | 01 01 40 | 02 00 00 | 03 00 00"))
        // Disabled sensors and one enabled at 160 ms.
        let one = try SensorConfiguration(decoding: bytes("04 00 00 | 05 00 a0 | 06 00 00"))
        #expect(one.enabledSensors == [.magnetometer] && one.period(of: .magnetometer) == ._160ms && !one.isEnabled(.orientation))
    }

    @Test func everyPeriodInBothEncodings() throws {
        // bit position -> mask bit, milliseconds -> configuration bytes
        let table: [(SamplePeriod, UInt16, String)] = [
            (._320ms, 0x0001, "01 40"), (._160ms, 0x0002, "00 a0"), (._80ms, 0x0004, "00 50"), (._40ms, 0x0008, "00 28"),
            (._20ms, 0x0010, "00 14"),
        ]
        for (period, maskBit, milliseconds) in table {
            let info = bytes("00 ff f0 00 10 80 00 7f ff") + [UInt8(maskBit >> 8), UInt8(maskBit & 0xFF), 7]
            #expect(try SensorInformation(decoding: info)[.accelerometer]?.availablePeriods == [period])
            let config = try SensorConfiguration(decoding: bytes("00 " + milliseconds))
            #expect(config.enabledSensorsSamplePeriod == period)
            #expect(SamplePeriod(milliseconds: period.milliseconds) == period && SamplePeriod(bitPosition: period.bitPosition) == period)
        }
        #expect(SamplePeriod(milliseconds: 4) == nil && SamplePeriod(bitPosition: 320) == nil)
        #expect(SamplePeriod._20ms.frequency == 50 && SamplePeriod._320ms.frequency == 3.125)
    }

    @Test func sensorDataOfThreeRecords() throws {
        let wire = bytes("""
            00 12 34 10 00 f0 00 00 00 03
            02 12 35 00 00 00 00 20 00 37 6d 00 c8
            03 ff ff 40 00 00 00 00 00 00 00
            """)
        let expected = [
            SensorRecord(timestamp: 0x1234, sample: .accelerometer(RawVector(x: 4096, y: -4096, z: 0), accuracy: .high)),
            SensorRecord(timestamp: 0x1235, sample: .rotation(RawQuaternion(x: 0, y: 0, z: 8192, w: 14189), accuracy: 200)),
            SensorRecord(timestamp: 0xFFFF, sample: .gameRotation(RawQuaternion(x: 16384, y: 0, z: 0, w: 0))),
        ]
        let decoded = try SensorDataNotification(decoding: wire, using: Self.sensorInformation)
        #expect(decoded.records == expected)
        #expect(try SensorDataNotification(records: expected).encoded() == wire)

        // Scaled as the SDK does: (raw - minRaw) * (maxScaled - minScaled) / (maxRaw - minRaw) + minScaled.
        let accelerometer = try decoded.records[0].value(using: Self.sensorInformation)
        #expect(accelerometer == .vector(Vector(x: 1_179_648.0 / 65535 - 16, y: 917_504.0 / 65535 - 16, z: 1_048_576.0 / 65535 - 16),
                                         accuracy: .high))
        let rotation = try decoded.records[1].value(using: Self.sensorInformation)
        #expect(rotation == .quaternion(Quaternion(x: 0, y: 0, z: 0.5, w: 14189.0 / 16384), estimatedAccuracy: 200.0 / 16384))
        #expect(try decoded.records[2].value(using: Self.sensorInformation) == .quaternion(Quaternion(x: 1, y: 0, z: 0, w: 0), estimatedAccuracy: nil))
    }

    @Test func everySensorsSampleShape() throws {
        let info = replaySensorInformation
        let cases: [(String, SensorSample)] = [
            ("00 00 01 | 00 01 00 02 ff ff | 00", .accelerometer(RawVector(x: 1, y: 2, z: -1), accuracy: .unreliable)),
            ("01 00 02 | 80 00 7f ff 00 00 | 01", .gyroscope(RawVector(x: .min, y: .max, z: 0), accuracy: .low)),
            ("02 00 03 | 00 01 00 02 00 03 00 04 | ff fe", .rotation(RawQuaternion(x: 1, y: 2, z: 3, w: 4), accuracy: -2)),
            ("03 00 04 | 00 01 00 02 00 03 00 04", .gameRotation(RawQuaternion(x: 1, y: 2, z: 3, w: 4))),
            ("04 00 05 | 00 0a 00 14 00 1e | 02", .orientation(RawVector(x: 10, y: 20, z: 30), accuracy: .medium)),
            ("05 00 06 | 00 0a 00 14 00 1e | 03", .magnetometer(RawVector(x: 10, y: 20, z: 30), accuracy: .high)),
            ("06 00 07 | 00 0a 00 14 00 1e | ff f6 ff ec ff e2", .uncalibratedMagnetometer(RawVector(x: 10, y: 20, z: 30), bias: RawVector(x: -10, y: -20, z: -30))),
        ]
        for (text, sample) in cases {
            let wire = bytes(text)
            #expect(wire.count == 3 + sample.sensor.sampleLength, "\(sample.sensor)")
            let decoded = try SensorDataNotification(decoding: wire, using: info)
            #expect(decoded.records == [SensorRecord(timestamp: UInt16(sample.sensor.rawValue) + 1, sample: sample)])
            #expect(decoded.encoded() == wire)
        }
        // All seven back to back, in any order, walk by their own lengths.
        let all = cases.reversed().map { bytes($0.0) }.joined()
        #expect(try SensorDataNotification(decoding: Array(all), using: info).records.map(\.sensor) == SensorType.allCases.reversed())
    }

    @Test func gestures() throws {
        let infoWire = bytes("80 00 00 | 81 00 00 | 82 00 00 | 83 00 00")
        let info = try GestureInformation(decoding: infoWire)
        #expect(info.availableGestures == [.singleTap, .doubleTap, .headNod, .headShake])
        #expect(info.encoded() == infoWire)
        let lengths = try GestureInformation(decoding: bytes("83 01 02"))
        #expect(lengths.entries == [GestureInformation.Entry(gesture: .headShake, payloadLength: 0x0102)])

        let configWire = bytes("80 00 | 81 01 | 82 00 | 83 00")
        var config = try GestureConfiguration(decoding: configWire)
        #expect(config.enabledGestures == [.doubleTap] && config.isEnabled(.doubleTap) && !config.isEnabled(.headNod))
        #expect(config.encoded() == configWire)
        config.disableAll()
        config.set(gesture: .headNod, enabled: true)
        #expect(config.encoded() == bytes("80 00 81 00 82 01 83 00"))

        let data = try GestureData(decoding: bytes("81 ab cd"))
        #expect(data == GestureData(gesture: .doubleTap, timestamp: 0xABCD))
        #expect(data.encoded() == bytes("81 ab cd"))
        #expect(GestureType.allCases.map(\.bitPosition) == [0, 1, 2, 3])
    }

    @Test func serviceUUIDs() {
        #expect(WearableService.uuid16 == 0xFDD2)
        #expect(Set(WearableCharacteristic.allCases.map(\.uuid)).count == 7)
        #expect(WearableCharacteristic(uuid: "56a72ab8-4988-4cc8-a752-fbd1d54a953d") == .sensorData)
        #expect(WearableCharacteristic.sensorConfiguration.properties == [.read, .writeWithResponse, .notify])
        #expect(WearableCharacteristic.gestureData.properties == [.notify])
    }
}
