import Failure
import LightX

extension ErrorCodeIn where Domain == HeadsetError {
    /// A factory command was refused because the unit is factory-locked (unlock it first).
    public static var factoryLocked: Self { Self(rawValue: "factory-locked") }
    /// The device has no factory command set (NotSupported and not locked): not a production-line unit.
    public static var factoryNotSupported: Self { Self(rawValue: "factory-not-supported") }
    /// The device refused the factory key.
    public static var factoryKeyRefused: Self { Self(rawValue: "factory-key-refused") }
}

/// The typed factory API (docs/protocol.md §7) over a `LightXSession`: the unit's hardware id, its identity
/// (serial number, Bluetooth name and address), ANC calibration, and the factory lock. Reads work in the application
/// and the bootloader; writes need the bootloader and §5 authentication (`Bootloader.authenticate()`), as on the
/// device.
///
/// Throws `HeadsetError`: `.factoryLocked` for a write to a locked unit, `.factoryNotSupported` for a device
/// without the factory commands, `.invalidArgument` for a value the device could never take (checked before
/// sending), `.factoryKeyRefused`, the `.device…` status codes otherwise, and the session's link errors.
public struct FactoryAccess: Sendable {
    public let session: LightXSession

    public init(session: LightXSession) {
        self.session = session
    }

    // MARK: Reads

    /// The chip's unique id (0x68), readable before provisioning and when locked.
    public func hardwareID() async throws -> HardwareID {
        try await read(FactorySettings.hardwareID)
    }

    /// The serial number (Config 0x04); nil while none was written.
    public func readSerialNumber() async throws -> String? {
        let text = try await read(ConfigStrings.setting(for: .configSerialNumber)!)
        return text.isEmpty ? nil : text
    }

    /// The Bluetooth display name (Config 0x11).
    public func readBluetoothName() async throws -> String {
        try await read(ConfigStrings.setting(for: .configBTDisplayName)!)
    }

    /// The Bluetooth address (0x75); nil while none was written (NotFound).
    public func readBluetoothAddress() async throws -> BDAddress? {
        try await readUnlessNotFound(FactorySettings.bluetoothAddress)
    }

    /// The stored ANC calibration (0x72 read); nil while none was stored (NotFound).
    public func readCalibration() async throws -> AncCalibration? {
        try await readUnlessNotFound(FactorySettings.storedCalibration)
    }

    /// Whether the unit is factory-locked (0x69).
    public func isLocked() async throws -> Bool {
        try await read(FactorySettings.lock)
    }

    // MARK: Measurements

    /// Takes one factory measurement (0x6B) and returns it in its unit (`m.unit`): percent, dBFS or dB. Works in
    /// the application and the bootloader of an unlocked unit, without authentication; a locked unit refuses it
    /// (`.factoryLocked`), a device without factory commands too (`.factoryNotSupported`). The device is busy while
    /// it measures (50...150 ms on the simulated unit); each read is a new measurement, so a retry can differ.
    public func measure(_ m: FactoryMeasurement) async throws -> Double {
        let reply = try await session.request(m.readRequest(session.style))
        guard reply.status == .ok else {
            throw try await refusal(reply, command: .factoryMeasurement, label: "factory measurement \(m.name) (0x6B)")
        }
        do {
            return try FactoryMeasurement.decodeValue(reply.buffer)
        } catch {
            throw HeadsetError.malformed(error, command: .factoryMeasurement)
        }
    }

    // MARK: Writes (bootloader, authenticated)

    /// Writes the serial number (Config 0x04): 1...31 bytes of printable ASCII.
    public func writeSerialNumber(_ serial: String) async throws {
        try await write(try encodeRequest { () throws(LightXError) in try FactorySettings.writeString(serial, .configSerialNumber, session.style) })
    }

    /// Writes the Bluetooth display name (Config 0x11): 1...31 UTF-8 bytes without control characters.
    public func writeBluetoothName(_ name: String) async throws {
        try await write(try encodeRequest { () throws(LightXError) in try FactorySettings.writeString(name, .configBTDisplayName, session.style) })
    }

    /// Writes the Bluetooth address (0x75).
    public func writeBluetoothAddress(_ address: BDAddress) async throws {
        try await write(try encodeRequest { () throws(LightXError) in try FactorySettings.bluetoothAddress.writeRequest(address, session.style) })
    }

    /// Starts the ANC calibration measurement (0x71 write); the reply comes when it is done.
    public func startCalibration() async throws {
        try await write(FactorySettings.startCalibration(session.style))
    }

    /// The calibration state (0x71 read): nothing, measured (not stored) or stored, with the gains.
    public func calibrationStatus() async throws -> CalibrationStatus {
        let reply = try await session.request(FactorySettings.calibrationStatus.readRequest(session.style))
        guard reply.status == .ok else { throw try await refusal(reply, command: .diagAncStartCalibration) }
        return try decode(FactorySettings.calibrationStatus, reply.buffer)
    }

    /// Stores the measured calibration (0x72 write). The device fails it when nothing was measured.
    public func storeCalibration() async throws {
        try await write(FactorySettings.storeCalibration(session.style))
    }

    /// Locks the unit (0x69 write 1): identity writes, calibration and lock refuse from then on.
    public func lock() async throws {
        try await write(try encodeRequest { () throws(LightXError) in try FactorySettings.lock.writeRequest(true, session.style) })
    }

    /// Unlocks the unit with the line's factory key (0x6A). Throws `.factoryKeyRefused` when the device refuses it
    /// (wrong key, or not authenticated).
    public func unlock(key: FactoryKey) async throws {
        let request = try encodeRequest { () throws(LightXError) in try FactorySettings.unlock.writeRequest(key, session.style) }
        let reply = try await session.request(request)
        switch reply.status {
        case .ok: return
        case .fail: throw HeadsetError(.factoryKeyRefused, "the device refused the factory key (wrong key, or not authenticated)", status: .fail, command: .factoryUnlock)
        default: throw try await refusal(reply, command: .factoryUnlock)
        }
    }

    // MARK: Plumbing

    private func read<V>(_ setting: Setting<V>) async throws -> V {
        let reply = try await session.request(setting.readRequest(session.style))
        guard reply.status == .ok else { throw try await refusal(reply, command: setting.command) }
        return try decode(setting, reply.buffer)
    }

    private func readUnlessNotFound<V>(_ setting: Setting<V>) async throws -> V? {
        let reply = try await session.request(setting.readRequest(session.style))
        if reply.status == .notFound { return nil }
        guard reply.status == .ok else { throw try await refusal(reply, command: setting.command) }
        return try decode(setting, reply.buffer)
    }

    private func write(_ request: Packet) async throws {
        let reply = try await session.request(request)
        guard reply.status == .ok else { throw try await refusal(reply, command: request.command) }
    }

    private func decode<V>(_ setting: Setting<V>, _ buffer: ArraySlice<UInt8>) throws -> V {
        do {
            return try setting.decode(buffer)
        } catch {
            throw HeadsetError.malformed(error, command: setting.command)
        }
    }

    /// The error for a failing reply: NotSupported becomes `.factoryLocked` when the unit says it is locked, and
    /// `.factoryNotSupported` when it has no lock to ask about.
    /// `label` names the request in messages instead of the command.
    private func refusal(_ reply: Packet, command: Command, label: String? = nil) async throws -> HeadsetError {
        var plain = HeadsetError.deviceStatus(reply.status, command: command, buffer: reply.buffer)
        let name = label ?? commandName(command)
        if let label { plain.message = label + plain.message.dropFirst(commandName(command).count) }
        guard reply.status == .notSupported else { return plain }
        let notFactory = HeadsetError(.factoryNotSupported, "\(name): the device has no factory commands", status: reply.status, command: command)
        if command == .factoryLock && reply.opcode == .read { return notFactory }
        let lockReply = try await session.request(FactorySettings.lock.readRequest(session.style))
        guard lockReply.status == .ok, let locked = try? FactorySettings.lock.decode(lockReply.buffer) else { return notFactory }
        guard locked else { return plain }
        return HeadsetError(.factoryLocked, "\(name): the unit is factory-locked; unlock it first", status: reply.status, command: command)
    }
}

extension Bootloader {
    /// The factory API over this bootloader's session.
    public var factory: FactoryAccess { FactoryAccess(session: session) }
}

extension Headset {
    /// The factory API over this headset's session (reads; writes need the bootloader).
    public var factory: FactoryAccess { FactoryAccess(session: session) }
}
