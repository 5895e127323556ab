import Testing
import LightX
import HeadsetSimulator
import Transport
@testable import Headset

/// `FactoryAccess` against the in-process simulator: a blank unit provisioned, rebooted, read back, locked, unlocked.
@Suite struct FactoryAPITests {
    static func options(blank: Bool, seed: UInt64 = 5) -> SimulatorOptions {
        var o = SimulatorOptions(drainInterval: .zero, timeScale: 0)
        if blank { o.production = ProductionLine(seed: seed) }
        return o
    }

    static func session(_ transport: any Transport) -> LightXSession {
        LightXSession(transport: transport, options: .init(timeout: .seconds(10)))
    }

    /// Authenticates and jumps into the bootloader; returns when it answers as the bootloader.
    static func enterBootloader(_ boot: Bootloader) async throws {
        try await boot.authenticate()
        _ = try await boot.jumpToBootloader()
        while try await boot.imageType() != .bootloader {
            await Task.yield()   // time scale 0: no readiness delay; NotReady is not expected
        }
    }

    /// A unit of a server (not the in-process link, whose close on a lost link would stop the device).
    func withUnit(blank: Bool = true, _ body: (FactoryAccess, Bootloader, SimulatedHeadset) async throws -> Void) async throws {
        let server = try await SimulatorServer.start(count: 1, statePath: nil, options: Self.options(blank: blank))
        let device = server.devices[0]
        let boot = Bootloader(session: Self.session(await device.connect()))
        var failure: (any Error)?
        do { try await body(boot.factory, boot, device) } catch { failure = error }
        await boot.close()
        await server.shutdown()
        if let failure { throw failure }
    }

    @Test func provisionRebootAndReadBack() async throws {
        try await withUnit { factory, boot, device in
            let id = try await factory.hardwareID()
            #expect(id == ProductionLine(seed: 5).unit(0).hardwareID, "readable in the application, before provisioning")
            #expect(try await factory.readSerialNumber() == nil)
            #expect(try await factory.readBluetoothName() == "Tuneup Sim")
            #expect(try await factory.readBluetoothAddress() == nil)
            #expect(try await factory.readCalibration() == nil)
            #expect(try await factory.isLocked() == false)

            try await Self.enterBootloader(boot)
            let address = BDAddress(parsing: "00:1B:66:00:00:2A")!
            try await factory.writeSerialNumber("TS1-000042")
            try await factory.writeBluetoothName("Tuneup TS1-42")
            try await factory.writeBluetoothAddress(address)
            #expect(try await factory.calibrationStatus() == .none)
            try await factory.startCalibration()
            let measured = ProductionLine(seed: 5).unit(0).calibration
            #expect(try await factory.calibrationStatus() == .measured(measured))
            try await factory.storeCalibration()
            try await factory.lock()

            // Reboot: RAM is gone; what was written is read back from flash.
            await device.reboot()
            let again = FactoryAccess(session: Self.session(await device.connect()))
            #expect(try await again.hardwareID() == id)
            #expect(try await again.readSerialNumber() == "TS1-000042")
            #expect(try await again.readBluetoothName() == "Tuneup TS1-42")
            #expect(try await again.readBluetoothAddress() == address)
            #expect(try await again.readCalibration() == measured)
            #expect(try await again.isLocked() == true)
            await again.session.close()
        }
    }

    @Test func lockedUnitRefusesUntilUnlocked() async throws {
        try await withUnit { factory, boot, _ in
            try await Self.enterBootloader(boot)
            try await factory.writeSerialNumber("TS1-000001")
            try await factory.lock()
            let locked = await #expect(throws: HeadsetError.self) { try await factory.writeSerialNumber("TS1-000002") }
            #expect(locked?.code == .factoryLocked)
            let calibration = await #expect(throws: HeadsetError.self) { try await factory.startCalibration() }
            #expect(calibration?.code == .factoryLocked)
            let wrong = await #expect(throws: HeadsetError.self) {
                try await factory.unlock(key: FactoryKey(bytes: [UInt8](repeating: 7, count: 16))!)
            }
            #expect(wrong?.code == .factoryKeyRefused)
            try await factory.unlock(key: .development)
            #expect(try await factory.isLocked() == false)
            try await factory.writeSerialNumber("TS1-000002")
            #expect(try await factory.readSerialNumber() == "TS1-000002")
        }
    }

    @Test func badValuesAreRefusedBeforeSendingAndWritesNeedTheBootloader() async throws {
        try await withUnit { factory, boot, _ in
            let inApp = await #expect(throws: HeadsetError.self) { try await factory.writeSerialNumber("TS1-000001") }
            #expect(inApp?.code == .deviceNotSupported)
            try await Self.enterBootloader(boot)
            let empty = await #expect(throws: HeadsetError.self) { try await factory.writeSerialNumber("") }
            #expect(empty?.code == .invalidArgument)
            let long = await #expect(throws: HeadsetError.self) { try await factory.writeBluetoothName(String(repeating: "n", count: 40)) }
            #expect(long?.code == .invalidArgument)
            let nothing = await #expect(throws: HeadsetError.self) { try await factory.storeCalibration() }
            #expect(nothing?.code == .deviceFailed)
            #expect(try await factory.readSerialNumber() == nil)
        }
    }

    @Test func classicHeadsetHasNoFactoryCommands() async throws {
        try await withUnit(blank: false) { factory, _, _ in
            let error = await #expect(throws: HeadsetError.self) { try await factory.hardwareID() }
            #expect(error?.code == .factoryNotSupported)
            let measure = await #expect(throws: HeadsetError.self) { try await factory.measure(.batteryLevel) }
            #expect(measure?.code == .factoryNotSupported)
            #expect(measure?.message.contains("battery-level") == true, "\(measure?.message ?? "")")
        }
    }

    /// Measurements in the application and the bootloader (no authentication needed), in their units; still taken
    /// once locked (a read).
    @Test func measureInBothImagesAlsoLocked() async throws {
        try await withUnit { factory, boot, _ in
            let unit = ProductionLine(seed: 5).unit(0)
            #expect(try await factory.measure(.batteryLevel) == 100)
            let left = try await factory.measure(.micSensitivityLeft)
            #expect(abs(left - (-38 + Double(unit.microphoneOffsets[0]) / 100)) <= 0.305, "\(left)")
            try await Self.enterBootloader(boot)
            let right = try await factory.measure(.micSensitivityRight)
            #expect(abs(right - (-38 + Double(unit.microphoneOffsets[1]) / 100)) <= 0.305, "\(right)")
            try await factory.startCalibration()
            try await factory.storeCalibration()
            #expect(try await factory.measure(.ancAttenuation) >= 23.7)
            try await factory.lock()
            #expect(try await factory.measure(.ancAttenuation) >= 23.7, "measured on the locked unit")
        }
    }
}
