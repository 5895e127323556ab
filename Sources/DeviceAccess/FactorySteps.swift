import Failure
import FirmwareUpdate
import Headset
import LightX

/// A factory step found the device holding something else than was written: a write that did not take.
public struct FactoryStepError: CodedError, Hashable {
    public typealias Code = ErrorCodeIn<FactoryStepError>
    public let code: Code
    /// One line: what was written and what the device holds.
    public let message: String
    public var category: FailureCategory { .device }

    public init(_ code: Code, _ message: String) {
        (self.code, self.message) = (code, message)
    }
}

extension ErrorCodeIn where Domain == FactoryStepError {
    /// A value read back after a write differs from what was written.
    public static var readBackMismatch: Self { Self(rawValue: "read-back-mismatch") }
}

/// The identity a station gives a unit; nil fields are left as they are.
public struct FactoryIdentity: Sendable, Hashable {
    public var serialNumber: String?
    public var bluetoothName: String?
    public var bluetoothAddress: BDAddress?

    public init(serialNumber: String? = nil, bluetoothName: String? = nil, bluetoothAddress: BDAddress? = nil) {
        (self.serialNumber, self.bluetoothName, self.bluetoothAddress) = (serialNumber, bluetoothName, bluetoothAddress)
    }

    public var isEmpty: Bool { serialNumber == nil && bluetoothName == nil && bluetoothAddress == nil }

    /// What the device would refuse in this identity (the codec's checks: 1...31 bytes, a serial of printable ASCII
    /// without spaces, a name without control characters, an address a device may have), as one line naming the
    /// option; nil when the device takes it. Checked before the unit is touched.
    public var problem: String? {
        do {
            if let serialNumber { try FactoryStrings.validate(serialNumber, for: .configSerialNumber) }
            if let bluetoothName { try FactoryStrings.validate(bluetoothName, for: .configBTDisplayName) }
        } catch {
            return error.message
        }
        return bluetoothAddress?.notADeviceAddress
    }
}

/// Everything a unit holds of its factory state, as scripts read it (`tuneup factory info --format json`).
public struct FactoryInfo: Sendable, Hashable, Encodable {
    /// The four ANC gains in wire order: feedforward left, right, feedback left, right.
    public struct Gains: Sendable, Hashable, Encodable {
        public var feedforwardLeft: Int
        public var feedforwardRight: Int
        public var feedbackLeft: Int
        public var feedbackRight: Int

        public init(_ c: AncCalibration) {
            feedforwardLeft = Int(c.feedforwardLeft)
            feedforwardRight = Int(c.feedforwardRight)
            feedbackLeft = Int(c.feedbackLeft)
            feedbackRight = Int(c.feedbackRight)
        }
    }

    /// "application" or "bootloader".
    public var mode: String
    public var hardwareID: String
    public var serialNumber: String?
    public var bluetoothName: String
    public var bluetoothAddress: String?
    /// "none", "measured" (not stored yet: reported by an unlocked unit in its bootloader) or "stored".
    public var calibrationStatus: String
    /// The measured-but-not-stored gains (bootloader only).
    public var measuredCalibration: Gains?
    /// The gains stored in flash.
    public var storedCalibration: Gains?
    public var locked: Bool
}

/// What `FactorySteps.calibrate` measured, and whether it was stored.
public struct CalibrationResult: Sendable, Hashable, Encodable {
    public var calibration: FactoryInfo.Gains
    /// The largest correction in dB (what a recipe's test limit checks).
    public var largestCorrectionDB: Double
    public var stored: Bool
}

/// What a unit must hold (`tuneup factory verify`, the station's final check); nil fields are not checked.
public struct FactoryExpectation: Sendable, Hashable {
    public var serialNumber: String?
    public var bluetoothName: String?
    public var bluetoothAddress: BDAddress?
    /// True: locked; false: unlocked.
    public var locked: Bool?
    /// True: a calibration is stored in flash; false: none is (a measured, unstored one does not count).
    public var calibrated: Bool?

    public init(serialNumber: String? = nil, bluetoothName: String? = nil, bluetoothAddress: BDAddress? = nil,
                locked: Bool? = nil, calibrated: Bool? = nil) {
        (self.serialNumber, self.bluetoothName, self.bluetoothAddress) = (serialNumber, bluetoothName, bluetoothAddress)
        (self.locked, self.calibrated) = (locked, calibrated)
    }

    public var isEmpty: Bool { self == FactoryExpectation() }

    /// One check per expected field, in a fixed order: serial, bt-name, bt-address, lock, calibration.
    public func checks(against info: FactoryInfo) -> [FactoryCheck] {
        var checks: [FactoryCheck] = []
        if let serialNumber { checks.append(FactoryCheck(what: "serial", expected: serialNumber, actual: info.serialNumber)) }
        if let bluetoothName { checks.append(FactoryCheck(what: "bt-name", expected: bluetoothName, actual: info.bluetoothName)) }
        if let bluetoothAddress {
            checks.append(FactoryCheck(what: "bt-address", expected: bluetoothAddress.description, actual: info.bluetoothAddress))
        }
        if let locked {
            checks.append(FactoryCheck(what: "lock", expected: locked ? "locked" : "unlocked", actual: info.locked ? "locked" : "unlocked"))
        }
        if let calibrated {
            // "measured" (not stored) is not calibrated: it is lost at the next reset.
            let ok = (info.calibrationStatus == "stored") == calibrated
            checks.append(FactoryCheck(what: "calibration", expected: calibrated ? "stored" : "not stored",
                                       actual: info.calibrationStatus, ok: ok))
        }
        return checks
    }
}

/// One comparison of `FactoryExpectation.checks`: what the options said and what the unit holds (nil: nothing).
public struct FactoryCheck: Sendable, Hashable, Encodable {
    /// "serial", "bt-name", "bt-address", "lock" or "calibration".
    public var what: String
    public var expected: String
    public var actual: String?
    public var ok: Bool

    public init(what: String, expected: String, actual: String?, ok: Bool? = nil) {
        (self.what, self.expected, self.actual) = (what, expected, actual)
        self.ok = ok ?? (expected == actual)
    }

    /// One line for a mismatch: "serial: expected 'TS1-000042', the unit holds 'TS1-000041'" (or "holds none").
    public var line: String {
        "\(what): expected '\(expected)', the unit holds \(actual.map { "'\($0)'" } ?? "none")"
    }

    // `actual` is always present in JSON (null when the unit holds nothing), so a script need not guess.
    private enum CodingKeys: String, CodingKey { case what, expected, actual, ok }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(what, forKey: .what)
        try c.encode(expected, forKey: .expected)
        try c.encode(actual, forKey: .actual)
        try c.encode(ok, forKey: .ok)
    }
}

/// The result of `FactorySteps.verify`: ok when every check is.
public struct FactoryVerification: Sendable, Hashable, Encodable {
    public var ok: Bool
    public var checks: [FactoryCheck]

    public init(checks: [FactoryCheck]) {
        self.checks = checks
        ok = checks.allSatisfy(\.ok)
    }

    /// The checks that failed.
    public var mismatches: [FactoryCheck] { checks.filter { !$0.ok } }
}

/// The factory steps (docs/protocol.md §7) as whole sequences over a `BootloaderClient`: each write step enters the
/// bootloader if needed (authenticating), writes, reads back and verifies, and leaves the bootloader again when it
/// entered it. Shared by the `tuneup factory` commands and the station.
///
/// Throws `HeadsetError` (`.factoryLocked`, `.factoryNotSupported`, `.factoryKeyRefused`, device status codes, link
/// errors), `UpdateError` for the mode switches, `FactoryStepError.readBackMismatch` when a write did not take.
public struct FactorySteps: Sendable {
    public let client: BootloaderClient

    public init(client: BootloaderClient) {
        self.client = client
    }

    /// Reads the unit's factory state in whichever mode it runs (nothing is written, no mode switch).
    public func info() async throws -> FactoryInfo {
        let inBootloader = try await client.isInBootloader()
        return try await client.onDevice { headset in try await Self.info(headset.factory, inBootloader: inBootloader) }
    }

    /// Takes one factory measurement (0x6B) in whichever mode the unit runs: no mode switch and no authentication
    /// (the unit measures in its application and its bootloader alike, so a station saves two resets per unit and
    /// measures before it locks). Returns the value in `m.unit`; a locked unit → `HeadsetError.factoryLocked`.
    public func measure(_ m: FactoryMeasurement) async throws -> Double {
        try await client.onDevice { try await $0.factory.measure(m) }
    }

    /// Reads the unit's factory state (as `info()`, no mode switch) and compares it with `expectation`.
    public func verify(_ expectation: FactoryExpectation) async throws -> FactoryVerification {
        FactoryVerification(checks: expectation.checks(against: try await info()))
    }

    /// Writes the identity's fields, reads them back and verifies them; returns the state read afterwards, its mode
    /// the one the unit is left in: back in its application if it ran it before.
    public func writeIdentity(_ identity: FactoryIdentity) async throws -> FactoryInfo {
        try await inBootloaderReading { factory in
            if let serial = identity.serialNumber { try await factory.writeSerialNumber(serial) }
            if let name = identity.bluetoothName { try await factory.writeBluetoothName(name) }
            if let address = identity.bluetoothAddress { try await factory.writeBluetoothAddress(address) }
            let info = try await Self.info(factory, inBootloader: true)
            try Self.verify("serial number", identity.serialNumber, info.serialNumber)
            try Self.verify("Bluetooth name", identity.bluetoothName, info.bluetoothName)
            try Self.verify("Bluetooth address", identity.bluetoothAddress?.description, info.bluetoothAddress)
            return info
        }
    }

    /// Runs the ANC calibration measurement; with `store`, stores it and verifies the stored gains.
    public func calibrate(store: Bool) async throws -> CalibrationResult {
        try await inBootloader { factory in
            try await factory.startCalibration()
            guard case let .measured(measured) = try await factory.calibrationStatus() else {
                throw FactoryStepError(.readBackMismatch, "the device reports no measurement after the ANC calibration")
            }
            if store {
                try await factory.storeCalibration()
                let held = try await factory.readCalibration()
                guard held == measured else {
                    throw FactoryStepError(.readBackMismatch, "the stored ANC calibration \(held.map { "\($0.gains)" } ?? "(none)") differs from the measured \(measured.gains)")
                }
            }
            return CalibrationResult(calibration: .init(measured), largestCorrectionDB: measured.largestCorrectionDB, stored: store)
        }
    }

    /// Locks the unit and verifies that it says it is locked.
    public func lock() async throws -> FactoryInfo {
        try await inBootloaderReading { factory in
            try await factory.lock()
            let info = try await Self.info(factory, inBootloader: true)
            guard info.locked else { throw FactoryStepError(.readBackMismatch, "the unit still reports unlocked after the lock") }
            return info
        }
    }

    /// Unlocks the unit with `key` and verifies that it says it is unlocked.
    public func unlock(key: FactoryKey) async throws -> FactoryInfo {
        try await inBootloaderReading { factory in
            try await factory.unlock(key: key)
            let info = try await Self.info(factory, inBootloader: true)
            guard !info.locked else { throw FactoryStepError(.readBackMismatch, "the unit still reports locked after the unlock") }
            return info
        }
    }

    // MARK: Plumbing

    /// Enters the bootloader when the application runs (after checking the unit has factory commands at all, so a
    /// classic headset is refused without a mode switch), runs `body`, and leaves again when it entered — also when
    /// `body` fails, so a refused step leaves the unit as it found it.
    private func inBootloader<T: Sendable>(_ body: @escaping @Sendable (FactoryAccess) async throws -> T) async throws -> T {
        try await inBootloaderLeaving(body).value
    }

    /// `inBootloader` for a step that returns the state it read in the bootloader: the state is reported in the mode
    /// the unit is left in, so a unit taken back to its application says "application" (and, there, no measured but
    /// unstored calibration: the reset drops it).
    private func inBootloaderReading(_ body: @escaping @Sendable (FactoryAccess) async throws -> FactoryInfo) async throws -> FactoryInfo {
        var (info, left) = try await inBootloaderLeaving(body)
        if left {
            info.mode = "application"
            info.measuredCalibration = nil
            info.calibrationStatus = info.storedCalibration == nil ? "none" : "stored"
        }
        return info
    }

    /// `inBootloader`, saying whether it left the bootloader afterwards (the unit ran its application before).
    private func inBootloaderLeaving<T: Sendable>(_ body: @escaping @Sendable (FactoryAccess) async throws -> T) async throws -> (value: T, left: Bool) {
        let wasInBootloader = try await client.isInBootloader()
        _ = try await client.onDevice { try await $0.factory.hardwareID() }
        if !wasInBootloader { try await client.enter() }
        do {
            let value = try await client.inBootloader { try await body($0.factory) }
            if !wasInBootloader { try await client.leave() }
            return (value, !wasInBootloader)
        } catch {
            if !wasInBootloader { try? await client.leave() }
            throw error
        }
    }

    private static func verify(_ what: String, _ written: String?, _ held: String?) throws {
        guard let written, written != held else { return }
        throw FactoryStepError(.readBackMismatch, "wrote the \(what) '\(written)' but the device holds \(held.map { "'\($0)'" } ?? "none")")
    }

    private static func info(_ factory: FactoryAccess, inBootloader: Bool) async throws -> FactoryInfo {
        var info = FactoryInfo(
            mode: inBootloader ? "bootloader" : "application",
            hardwareID: try await factory.hardwareID().description,
            serialNumber: try await factory.readSerialNumber(),
            bluetoothName: try await factory.readBluetoothName(),
            bluetoothAddress: try await factory.readBluetoothAddress()?.description,
            calibrationStatus: "none",
            storedCalibration: try await factory.readCalibration().map(FactoryInfo.Gains.init),
            locked: try await factory.isLocked())
        // The measurement state (0x71 read) is the bootloader's, and a locked unit refuses it with the rest of the
        // calibration: then what flash holds says it.
        info.calibrationStatus = info.storedCalibration == nil ? "none" : "stored"
        if inBootloader && !info.locked {
            switch try await factory.calibrationStatus() {
            case .none: info.calibrationStatus = "none"
            case let .measured(c): info.calibrationStatus = "measured"; info.measuredCalibration = .init(c)
            case .stored: info.calibrationStatus = "stored"
            }
        }
        return info
    }
}
