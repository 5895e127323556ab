import LightX
import Testing
import Transport
@testable import HeadsetSimulator

extension DeviceMachine {
    /// Takes measurement `m` (0x6B); the value in its unit, or nil with the status when refused.
    mutating func measure(_ m: FactoryMeasurement, sourceLocation: SourceLocation = #_sourceLocation) throws -> Double {
        let reply = reply(m.readRequest(), sourceLocation: sourceLocation)
        try #require(reply.status == .ok, "\(m.name): \(reply.status)", sourceLocation: sourceLocation)
        return try FactoryMeasurement.decodeValue(reply.buffer)
    }

    /// Measures, calibrates and stores, as a station does (bootloader, authenticated).
    mutating func storeCalibration() {
        #expect(status(FactorySettings.startCalibration()) == .ok)
        #expect(status(FactorySettings.storeCalibration()) == .ok)
    }
}

/// The factory measurements of a blank unit (extension 0x6B, docs/protocol.md §7.2): per-unit values from the
/// seeded spread, per-read noise, the recipe's limits, the lock, and the classic headset.
@Suite struct FactoryMeasurementTests {
    /// The recipe's limits (recipes/sim-headset.yaml).
    static let micLimits = -42.0 ... -34.0
    static let attenuationLow = 18.0

    static func readings(_ line: ProductionLine, index: Int, reads: Int = 6) throws -> [Double] {
        var m = try DeviceMachine.blankUnit(line, index: index)
        return try (0..<reads).flatMap { _ in try FactoryMeasurement.allCases.map { try m.measure($0) } }
    }

    @Test func valuesAreDeterministicPerUnitAndDifferBetweenUnits() throws {
        let line = ProductionLine(seed: 7)
        let first = try Self.readings(line, index: 0)
        #expect(first == (try Self.readings(ProductionLine(seed: 7), index: 0)), "same seed, unit and reads: same values")
        #expect(first != (try Self.readings(line, index: 1)), "another unit reads otherwise")
        #expect(first != (try Self.readings(ProductionLine(seed: 8), index: 0)), "another line reads otherwise")
    }

    /// Microphones: −38 dBFS + the feedforward microphone's offset, within ±0.3 dB of noise that changes per read.
    @Test func micSensitivityIsNominalPlusOffsetPlusNoise() throws {
        let line = ProductionLine(seed: 12)
        for index in 0..<8 {
            let unit = line.unit(index)
            var m = try DeviceMachine.blankUnit(line, index: index)
            for (mic, offset) in [(FactoryMeasurement.micSensitivityLeft, unit.microphoneOffsets[0]),
                                  (.micSensitivityRight, unit.microphoneOffsets[1])] {
                let expected = FactoryUnit.nominalSensitivityDBFS + Double(offset) / 100
                let values = try (0..<10).map { _ in try m.measure(mic) }
                for v in values {
                    #expect(abs(v - expected) <= FactoryUnit.noiseDB + 0.005, "unit \(index) \(mic.name): \(v), expected \(expected) ± 0.3")
                    #expect(Self.micLimits.contains(v), "a good unit passes: \(v)")
                }
                #expect(Set(values).count > 1, "a retry can read another value: \(values)")
            }
            #expect(try m.measure(.batteryLevel) == Double(m.settings.batteryPercent))
        }
    }

    @Test func batteryLevelIsTheSimulatedBattery() throws {
        var m = try DeviceMachine.blankUnit()
        #expect(try m.measure(.batteryLevel) == 100)
        m.settings.batteryPercent = 37
        #expect(try m.measure(.batteryLevel) == 37)
    }

    /// Without a stored calibration the attenuation is 24 − 2 × the largest |offset| (minus noise); with one it is
    /// about 24 dB; a measured but unstored calibration does not count; the stored one survives a power cycle.
    @Test func ancAttenuationNeedsAStoredCalibration() throws {
        let line = ProductionLine(seed: 5)
        let unit = line.unit(2)
        var m = try DeviceMachine.blankUnit(line, index: 2)
        let largest = Double(unit.microphoneOffsets.map { abs(Int($0)) }.max()!) / 100
        let uncalibrated = try m.measure(.ancAttenuation)
        #expect(abs(uncalibrated - (24 - 2 * largest)) <= FactoryUnit.noiseDB + 0.005, "\(uncalibrated) with largest offset \(largest)")
        #expect(m.status(FactorySettings.startCalibration()) == .ok)
        #expect(abs(try m.measure(.ancAttenuation) - uncalibrated) <= 2 * FactoryUnit.noiseDB + 0.01, "measured only: not applied")
        #expect(m.status(FactorySettings.storeCalibration()) == .ok)
        let calibrated = try m.measure(.ancAttenuation)
        #expect((23.7...24.0).contains(calibrated), "\(calibrated)")
        try m.powerCycleIntoBootloader()
        #expect((23.7...24.0).contains(try m.measure(.ancAttenuation)), "the calibration is in flash")
    }

    /// A unit of the fail share: a feedforward microphone 6.01...9 dB off fails the recipe's microphone limits on every
    /// read; any off microphone exceeds the calibration limit; and even calibrated its ANC stays at or below 20 dB.
    @Test func failShareUnitsFailTheRecipe() throws {
        let line = ProductionLine(seed: 31, failShare: 1)
        var feedforward = 0
        for index in 0..<24 {
            let unit = line.unit(index)
            #expect(unit.calibration.largestCorrectionDB > 6, "beyond the recipe's ±6 dB calibration limit")
            let off = try #require(unit.microphoneOffsets.firstIndex { abs(Int($0)) >= 600 })
            var m = try DeviceMachine.blankUnit(line, index: index)
            if off < 2 {
                feedforward += 1
                let mic: FactoryMeasurement = off == 0 ? .micSensitivityLeft : .micSensitivityRight
                for _ in 0..<5 {
                    let v = try m.measure(mic)
                    #expect(!Self.micLimits.contains(v), "unit \(index): \(mic.name) \(v) must fail")
                }
            }
            #expect(try m.measure(.ancAttenuation) < Self.attenuationLow, "unit \(index) uncalibrated")
            m.storeCalibration()
            #expect(try m.measure(.ancAttenuation) <= 20.0, "unit \(index): the correction is clipped at 4 dB")
        }
        #expect(feedforward > 0, "some units have an off feedforward microphone")
    }

    /// The measurement works in the application too (no mode switch, no authentication), and takes device time:
    /// 50, 100, 100, 150 ms, scaled by the time scale.
    @Test func measuresInTheApplicationAndTakesScaledTime() throws {
        let line = ProductionLine(seed: 9)
        for (scale, expected) in [(1.0, [50, 100, 100, 150]), (0.1, [5, 10, 10, 15])] {
            let config = DeviceConfiguration(index: 0, timing: DeviceTiming.standard.scaled(by: scale), queueDepth: 32,
                                             drainInterval: .zero, factory: line.unit(0))
            var m = DeviceMachine(config: config, flash: nil, settings: .factory(), randomSeed: 1, faults: .none, now: .now)
            m.powerOn(now: .now, delayed: false)
            #expect(m.state == .application)
            let busy = FactoryMeasurement.allCases.map { m.handle($0.readRequest(), now: .now).busy }
            #expect(busy == expected.map { Duration.milliseconds($0) }, "time scale \(scale)")
        }
    }

    @Test func badRequestsGetTheirStatus() throws {
        var m = try DeviceMachine.blankUnit()
        #expect(m.status(FactorySettings.readMeasurement(id: 0)) == .exceededLimits)
        #expect(m.status(FactorySettings.readMeasurement(id: 5)) == .exceededLimits)
        #expect(m.status(try Packet.request(.read, .factoryMeasurement)) == .fail, "the default 256-byte buffer is no id")
        #expect(m.status(try Packet.request(.read, .factoryMeasurement, argument: [2, 0, 0])) == .fail)
        #expect(m.status(try Packet.request(.write, .factoryMeasurement, argument: [2, 0, 0, 0])) == .notSupported)
    }

    @Test func lockedUnitStillMeasuresInBothImagesButRefusesWrites() throws {
        var m = try DeviceMachine.blankUnit()
        #expect(m.status(try FactorySettings.lock.writeRequest(true)) == .ok)
        for measurement in FactoryMeasurement.allCases {
            #expect(m.status(measurement.readRequest()) == .ok, "\(measurement.name) in the bootloader")
        }
        #expect(m.status(try Packet.request(.write, .factoryMeasurement, argument: [2, 0, 0, 0])) == .notSupported)
        m.powerOff()
        m.powerOn(now: .now, delayed: false)
        #expect(m.state == .application)
        #expect(m.status(FactoryMeasurement.micSensitivityLeft.readRequest()) == .ok, "in the application")
    }

    @Test func classicHeadsetAnswersNotSupported() throws {
        var m = DeviceMachine.testDevice()
        #expect(m.status(FactoryMeasurement.batteryLevel.readRequest()) == .notSupported, "application")
        try m.enterBootloaderForTest()
        #expect(m.status(FactoryMeasurement.ancAttenuation.readRequest()) == .notSupported, "bootloader")
    }
}
