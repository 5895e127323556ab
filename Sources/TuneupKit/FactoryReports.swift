import DeviceAccess
import Foundation
import LightX
import Support

// What `tuneup factory` reports, with its text for people: a program that provisions without a recipe prints what
// tuneup prints without writing it again.

extension FactoryInfo.Gains {
    /// "feedforward 3/-2, feedback 1/0".
    public var text: String { "feedforward \(feedforwardLeft)/\(feedforwardRight), feedback \(feedbackLeft)/\(feedbackRight)" }
}

extension FactoryInfo {
    /// A table: identity, calibration (with its gains), lock and mode.
    public var text: String {
        var calibration = calibrationStatus
        if let stored = storedCalibration { calibration += " (\(stored.text))" }
        else if let measured = measuredCalibration { calibration += " (\(measured.text))" }
        return TextTable.aligned([
            ("Hardware id", hardwareID),
            ("Serial number", serialNumber ?? "none"),
            ("Bluetooth name", bluetoothName),
            ("Bluetooth address", bluetoothAddress ?? "none"),
            ("Calibration", calibration),
            ("Locked", locked ? "yes" : "no"),
            ("Mode", mode),
        ])
    }
}

extension CalibrationResult {
    /// "ANC calibration stored: feedforward ..., feedback ... (largest correction 1.5 dB)".
    public var text: String {
        "ANC calibration \(stored ? "stored" : "measured, not stored"): \(calibration.text) (largest correction \(largestCorrectionDB) dB)"
    }
}

/// Factory measurements as `tuneup factory measure` reports them: `{"measurements": [{name, value, unit}]}`.
public struct FactoryReadings: Encodable, Sendable, Hashable {
    public struct Reading: Encodable, Sendable, Hashable {
        public var name: String
        public var value: Double
        public var unit: String

        public init(name: String, value: Double, unit: String) {
            (self.name, self.value, self.unit) = (name, value, unit)
        }
    }

    public var measurements: [Reading]

    public init(measurements: [Reading]) { self.measurements = measurements }

    /// A line per measurement: its name, the value with two decimals and its unit.
    public var text: String {
        TextTable.aligned(measurements.map { ($0.name, String(format: "%.2f", $0.value) + " " + $0.unit) })
    }

    /// The measurements named (`FactoryMeasurement(name:)`), all of them for none, in the order given.
    /// - Throws: `UnknownMeasurement` naming the unknown name and the known ones.
    public static func measurements(named names: [String]) throws(UnknownMeasurement) -> [FactoryMeasurement] {
        if names.isEmpty { return FactoryMeasurement.allCases }
        var list: [FactoryMeasurement] = []
        for name in names {
            guard let m = FactoryMeasurement(name: name) else { throw UnknownMeasurement(name: name) }
            list.append(m)
        }
        return list
    }

    /// A measurement name no `FactoryMeasurement` has.
    public struct UnknownMeasurement: Error, Sendable {
        public var name: String
        public var message: String {
            "unknown measurement '\(name)'; one of \(FactoryMeasurement.allCases.map(\.name).joined(separator: ", "))"
        }
    }
}

extension FactorySteps {
    /// Takes `measurements` in order, each a new reading in the mode the unit runs.
    public func measure(_ measurements: [FactoryMeasurement]) async throws -> FactoryReadings {
        var readings: [FactoryReadings.Reading] = []
        for m in measurements {
            readings.append(.init(name: m.name, value: try await measure(m), unit: m.unit))
        }
        return FactoryReadings(measurements: readings)
    }
}

extension FactoryVerification {
    /// "ok: serial, lock as expected", or a line per mismatch.
    public var text: String {
        ok ? "ok: \(checks.map(\.what).joined(separator: ", ")) as expected" : mismatches.map(\.line).joined(separator: "\n")
    }

    /// "the unit differs in 1 of 3 checks" (nil when it does not).
    public var summary: String? {
        ok ? nil : "the unit differs in \(mismatches.count) of \(checks.count) check\(checks.count == 1 ? "" : "s")"
    }
}
