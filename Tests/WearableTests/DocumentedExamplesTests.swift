import Foundation
import Testing
import Wearable

/// The hex examples of docs/wearable.md are what the codec produces: each is encoded here from its value and must
/// appear in the page byte for byte (the failure prints the bytes when an encoding changes), and decodes back.
@Suite struct DocumentedExamplesTests {
    static let page = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/wearable.md")

    static func examples() throws -> [(name: String, bytes: [UInt8])] {
        let device = DeviceInformation(
            majorVersion: 1, minorVersion: 2, productID: 0x4020, variant: 1,
            availableSensors: [.accelerometer, .gyroscope, .rotation, .gameRotation],
            availableGestures: [.singleTap, .doubleTap, .headNod, .headShake], transmissionPeriod: 40,
            maxPayloadPerTransmissionPeriod: 180, maxActiveSensors: 3, status: DeviceStatus(pairingEnabled: true, alreadyPaired: true))
        var configuration = try SensorConfiguration(disabled: [.accelerometer, .gyroscope, .rotation, .gameRotation])
        configuration.enable(sensor: .accelerometer, at: ._20ms)
        configuration.enable(sensor: .gyroscope, at: ._20ms)
        let notification = try SensorDataNotification(records: [
            SensorRecord(timestamp: 0x1234, sample: .accelerometer(RawVector(x: 4096, y: -4096, z: 0), accuracy: .high)),
            SensorRecord(timestamp: 0x1235, sample: .rotation(RawQuaternion(x: 0, y: 0, z: 8192, w: 14189), accuracy: 200)),
            SensorRecord(timestamp: 0xFFFF, sample: .gameRotation(RawQuaternion(x: 16384, y: 0, z: 0, w: 0))),
        ])
        var gestures = try GestureConfiguration([.singleTap, .doubleTap, .headNod, .headShake].map { .init(gesture: $0, enabled: false) })
        gestures.set(gesture: .doubleTap, enabled: true)
        return [
            ("device information", device.encoded()),
            ("sensor information", TestVectorTests.sensorInformation.encoded()),
            ("sensor configuration", configuration.encoded()),
            ("sensor data", notification.encoded()),
            ("gesture information", try GestureInformation([.singleTap, .doubleTap, .headNod, .headShake].map { .init(gesture: $0, payloadLength: 0) }).encoded()),
            ("gesture configuration", gestures.encoded()),
            ("gesture data", GestureData(gesture: .doubleTap, timestamp: 0xABCD).encoded()),
        ]
    }

    @Test func examplesAreTheCodecsBytes() throws {
        let text = try String(contentsOf: Self.page, encoding: .utf8)
        for (name, bytes) in try Self.examples() {
            #expect(text.contains("    " + hex(bytes) + "\n"), "\(name): \(hex(bytes))")
        }
    }
}
