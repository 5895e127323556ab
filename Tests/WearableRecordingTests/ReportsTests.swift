import Foundation
import TestSupport
import Testing
import Wearable
import WearableRecording
import WearableSession
import WearableSimulator

/// What `wearable info`, `sensors` and `gestures` report and write, made by the library against a simulated wearable.
@Suite struct WearableReportsTests {
    static func session() throws -> WearableDeviceSession {
        let wearable = try InProcessWearable(device: SimulatedWearable(clock: ManualClock()))
        return WearableDeviceSession(peer: "memory:wearable") { try wearable.connect() }
    }

    @Test func oneSensorWriteAndTheReportOfWhatTheDeviceAccepted() async throws {
        let s = try Self.session()
        try await s.open()
        let info = try await WearableInfoReport.of(s)
        #expect(info.device == "memory:wearable" && info.availableSensors.contains("accelerometer"))
        #expect(info.text.split(separator: "\n").first == "Device          memory:wearable")
        try await s.configureSensors(enable: [.accelerometer, .gyroscope], disable: [], disableAll: true, period: ._20ms, checked: true)
        let report = try await WearableSensorsReport.of(s, written: true)
        #expect(report.samplePeriodMs == 20)
        #expect(report.sensors.filter { $0.periodMs != nil }.map(\.sensor).sorted() == ["accelerometer", "gyroscope"])
        #expect(report.text.hasSuffix("accepted: accelerometer, gyroscope at 20 ms"))
        // --period alone moves the enabled sensors to it.
        try await s.configureSensors(enable: [], disable: [], disableAll: false, period: ._40ms, checked: true)
        #expect(try await WearableSensorsReport.of(s, written: true).samplePeriodMs == 40)
        let json = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(!json.contains("enabled\""), "the JSON keeps its fields: \(json)")
        await s.close()
    }

    @Test func gesturesAllThenOneOffAndARefusalExplained() async throws {
        let s = try Self.session()
        try await s.open()
        try await s.configureGestures(enable: [], disable: [.headShake], all: true, disableAll: false, checked: true)
        let report = try await WearableGesturesReport.of(s, written: true)
        #expect(report.gestures.first { $0.gesture == "headShake" }?.enabled == false)
        #expect(report.gestures.filter(\.enabled).count == report.gestures.count - 1)
        let error = await #expect(throws: WearableSessionError.self) {
            try await s.configureSensors(enable: [.rotation], disable: [], disableAll: true, period: ._320ms, checked: true)
        }
        let explained = WearableSessionError.explained(error as Error? ?? CancellationError()) as? WearableSessionError
        #expect(explained?.message.hasPrefix("refused before sending, ") == true && explained?.category == .usage, "\(String(describing: explained))")
        await s.close()
    }
}
