import Testing
@testable import DeviceAccess
import LightX
import TuneupKit

/// What `tuneup factory` prints, made by the library (issue 31 §1).
struct FactoryReportsTests {
    @Test func infoCalibrationAndReadings() throws {
        let gains = FactoryInfo.Gains(AncCalibration(feedforwardLeft: 3, feedforwardRight: -2, feedbackLeft: 1, feedbackRight: 0))
        let info = FactoryInfo(mode: "application", hardwareID: "9c1e", serialNumber: nil, bluetoothName: "TS1", bluetoothAddress: nil,
                               calibrationStatus: "stored", measuredCalibration: nil, storedCalibration: gains, locked: true)
        #expect(info.text == """
            Hardware id        9c1e
            Serial number      none
            Bluetooth name     TS1
            Bluetooth address  none
            Calibration        stored (feedforward 3/-2, feedback 1/0)
            Locked             yes
            Mode               application
            """)
        #expect(CalibrationResult(calibration: gains, largestCorrectionDB: 1.5, stored: false).text
            == "ANC calibration measured, not stored: feedforward 3/-2, feedback 1/0 (largest correction 1.5 dB)")
        let readings = FactoryReadings(measurements: [.init(name: "battery-level", value: 80, unit: "%"), .init(name: "anc-attenuation", value: 21.456, unit: "dB")])
        #expect(readings.text == "battery-level    80.00 %\nanc-attenuation  21.46 dB")
        #expect(try FactoryReadings.measurements(named: []) == FactoryMeasurement.allCases)
        #expect(try FactoryReadings.measurements(named: ["anc-attenuation"]) == [.ancAttenuation])
        let unknown = #expect(throws: FactoryReadings.UnknownMeasurement.self) { try FactoryReadings.measurements(named: ["volume"]) }
        #expect(unknown?.message.hasPrefix("unknown measurement 'volume'; one of battery-level, ") == true)
    }

    @Test func aVerificationSaysWhatDiffers() {
        let ok = FactoryVerification(checks: [FactoryCheck(what: "serial", expected: "A", actual: "A"), FactoryCheck(what: "lock", expected: "locked", actual: "locked")])
        #expect(ok.text == "ok: serial, lock as expected" && ok.summary == nil)
        let bad = FactoryVerification(checks: [FactoryCheck(what: "serial", expected: "A", actual: nil)])
        #expect(bad.text == "serial: expected 'A', the unit holds none")
        #expect(bad.summary == "the unit differs in 1 of 1 check")
    }
}
