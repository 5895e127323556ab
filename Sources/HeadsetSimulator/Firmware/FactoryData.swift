import LightX

/// What the factory wrote into a unit, as one record of the factory-data ring (`FlashMap.factoryData`, two sectors
/// of 128-byte records; the newest valid record wins, like the commit log). Little-endian:
///
/// | offset | field |
/// |---|---|
/// | 0 | magic u32 0x43414654 ("TFAC") |
/// | 4 | sequence u32 |
/// | 8 | flags u32: bit 0 locked, bit 1 serial, bit 2 name, bit 3 address, bit 4 calibration present |
/// | 12 | serial number, 32 bytes, NUL-padded |
/// | 44 | Bluetooth display name, 32 bytes, NUL-padded |
/// | 76 | Bluetooth address, 6 bytes (wire order), 2 bytes 0xFF |
/// | 84 | ANC calibration, 8 bytes (`AncCalibration` wire order) |
/// | 92 | reserved, 0xFF |
/// | 124 | record CRC u32: CRC-32/JAMCRC of bytes 0..<124 |
///
/// A record is one page program: a power cut leaves the whole record, none, or a torn one (ignored: the previous
/// record still holds).
struct FactoryRecord: Sendable, Hashable {
    var sequence: UInt32 = 0
    var locked = false
    var serialNumber: String?
    var bluetoothName: String?
    var bluetoothAddress: BDAddress?
    var calibration: AncCalibration?

    static let size = 128
    static let magic: UInt32 = 0x4341_4654
    static let ring = RecordRing(area: FlashMap.factoryData, recordSize: size)

    var encoded: [UInt8] {
        var w = ArgumentWriter()
        w.u32(Self.magic)
        w.u32(sequence)
        var flags: UInt32 = locked ? 1 : 0
        if serialNumber != nil { flags |= 2 }
        if bluetoothName != nil { flags |= 4 }
        if bluetoothAddress != nil { flags |= 8 }
        if calibration != nil { flags |= 16 }
        w.u32(flags)
        for text in [serialNumber, bluetoothName] {
            let utf8 = Array((text ?? "").utf8.prefix(FactoryStrings.capacity - 1))
            w.bytes(utf8 + [UInt8](repeating: 0, count: FactoryStrings.capacity - utf8.count))
        }
        w.bytes(bluetoothAddress.map { BDAddress.codec.encode($0) } ?? [UInt8](repeating: 0xFF, count: 6))
        w.bytes([0xFF, 0xFF])
        w.bytes(calibration.map { AncCalibration.codec.encode($0) } ?? [UInt8](repeating: 0xFF, count: 8))
        w.bytes([UInt8](repeating: 0xFF, count: 124 - w.bytes.count))
        w.u32(CRC32JAMCRC.checksum(w.bytes))
        return w.bytes
    }

    init() {}

    /// Decodes one slot; nil unless magic and record CRC match.
    init?(decoding slot: ArraySlice<UInt8>) {
        guard slot.count >= Self.size else { return nil }
        let s = slot.startIndex
        var r = ArgumentReader(slot[s..<(s + Self.size)], context: "factory record")
        guard let magic = try? r.u32("magic"), magic == Self.magic, let sequence = try? r.u32("sequence"),
              let flags = try? r.u32("flags"),
              let serial = try? r.bytes(32, "serial"), let name = try? r.bytes(32, "name"),
              let address = try? r.bytes(8, "address"), let calibration = try? r.bytes(8, "calibration"),
              (try? r.bytes(32, "reserved")) != nil, let crc = try? r.u32("record CRC"),
              crc == CRC32JAMCRC.checksum(slot[s..<(s + 124)]) else { return nil }
        func text(_ b: [UInt8]) -> String { String(decoding: b.prefix { $0 != 0 }, as: UTF8.self) }
        self.sequence = sequence
        locked = flags & 1 != 0
        serialNumber = flags & 2 != 0 ? text(serial) : nil
        bluetoothName = flags & 4 != 0 ? text(name) : nil
        bluetoothAddress = flags & 8 != 0 ? try? BDAddress.codec.decode(address.prefix(6)) : nil
        self.calibration = flags & 16 != 0 ? try? AncCalibration.codec.decode(calibration) : nil
    }

    /// The newest valid record in `flash` and its slot.
    static func latest(in flash: NORFlash) -> (slot: Int, record: FactoryRecord)? {
        var best: (slot: Int, record: FactoryRecord)?
        let bytes = flash[ring.area]
        for slot in 0..<ring.slotCount {
            let start = bytes.startIndex + slot * size
            if bytes[start] == 0xFF && bytes[start + 3] == 0xFF { continue }
            guard let record = FactoryRecord(decoding: bytes[start..<(start + size)]) else { continue }
            if best == nil || record.sequence > best!.record.sequence { best = (slot, record) }
        }
        return best
    }
}

/// The factory commands of a unit of a production line (docs/protocol.md §7). A unit without a line (the classic
/// simulated headset) answers none of them (NotSupported), as a device without the extension would.
///
/// - Reads, in the application and the bootloader: 0x68 hardware id, 0x69 lock state, 0x75 address (NotFound when
///   never written), 0x72 stored calibration (NotFound when none), and the Config strings, whose serial number and
///   Bluetooth name come from the factory record only (empty and "Tuneup Sim" on a blank unit).
/// - Everything else needs the bootloader (the application answers NotSupported) and, for writes, §5
///   authentication (else Fail): Config writes 0x04 / 0x11, 0x75 write, 0x71 write (measure; the device is busy for
///   `DeviceTiming.ancCalibration`) and read (status), 0x72 write (store the measurement; Fail when none), 0x69
///   write u32 1 (lock), 0x6A write the factory key (unlock; a wrong key → Fail).
/// - 0x6B measurement (Tuneup extension), read with a u32 id, in the application and the bootloader, without
///   authentication: the value of `FactoryUnit.measurement` as an i32 in hundredths; the device is busy for
///   `FactoryUnit.measurementTime`. A locked unit still measures (a read); an argument other than 4 bytes Fail, an
///   unknown id ExceededLimits; a write NotSupported.
/// - Locked: every one of those but 0x6A answers NotSupported, as a shipped device does; the reads (0x6B too) stay.
/// - Each write appends a record to the factory-data ring and reads it back: Ok only when flash holds it.
extension DeviceMachine {
    /// The reply to a factory command, or nil when `request` is not one (or this unit has no line).
    mutating func factoryOutcome(_ request: Packet, inBootloader: Bool, step: inout Step) -> Outcome? {
        guard let unit = config.factory, request.header.destination == .application,
              request.opcode == .read || request.opcode == .write else { return nil }
        let isRead = request.opcode == .read
        let command = request.command
        let record = FactoryRecord.latest(in: flash)?.record ?? FactoryRecord()
        switch command {
        case .configSerialNumber, .configSDHMSerialNumber, .configBTDisplayName:
            if isRead {
                let text = command == .configBTDisplayName ? record.bluetoothName ?? Self.blankBluetoothName : record.serialNumber ?? ""
                return ConfigStrings.setting(for: command).map { Outcome.ok($0.encode(text)) } ?? .notSupported
            }
            guard command != .configSDHMSerialNumber else { return .notSupported }
            return factoryWrite(request, inBootloader: inBootloader, record: record, step: &step) { (r: inout FactoryRecord) throws(LightXError) in
                let text = try FactoryStrings.decodeWrite(request.buffer, for: command)
                if command == .configSerialNumber { r.serialNumber = text } else { r.bluetoothName = text }
            }
        case .factoryHardwareID:
            return isRead ? .ok(unit.hardwareID.bytes) : .notSupported
        case .factoryLock:
            if isRead { return .ok(FactorySettings.lock.encode(record.locked)) }
            return factoryWrite(request, inBootloader: inBootloader, record: record, step: &step) { (r: inout FactoryRecord) throws(LightXError) in
                guard try FactorySettings.lock.decode(request.buffer) else {
                    throw LightXError(.valueOutOfRange, "unlocking takes 0x6A")
                }
                r.locked = true
            }
        case .factoryUnlock:
            guard !isRead, inBootloader else { return .notSupported }
            guard bootloader.isAuthenticated else { return .fail }
            guard let key = try? FactoryKey.codec.decode(request.buffer) else { return .fail }
            guard key == unit.factoryKey else { return .fail }
            guard record.locked else { return .ok() }
            var unlocked = record
            unlocked.locked = false
            return append(unlocked, step: &step)
        case .diagBDAddr:
            if isRead { return record.bluetoothAddress.map { Outcome.ok(BDAddress.codec.encode($0)) } ?? .notFound }
            return factoryWrite(request, inBootloader: inBootloader, record: record, step: &step) { (r: inout FactoryRecord) throws(LightXError) in
                r.bluetoothAddress = try BDAddress.codec.decode(request.buffer)
            }
        case .diagAncStoreCalibrationData:
            if isRead { return record.calibration.map { Outcome.ok(AncCalibration.codec.encode($0)) } ?? .notFound }
            let measured = bootloader.measuredCalibration
            let outcome = factoryWrite(request, inBootloader: inBootloader, record: record, step: &step) { (r: inout FactoryRecord) throws(LightXError) in
                guard let measured else { throw LightXError(.malformed, "nothing measured") }
                r.calibration = measured
            }
            if outcome.status == .ok { bootloader.measuredCalibration = nil }
            return outcome
        case .factoryMeasurement:
            guard isRead else { return .notSupported }
            let m: FactoryMeasurement
            do {
                m = try FactoryMeasurement.decodeRequest(request.buffer)
            } catch {
                return error.code == .valueOutOfRange ? .exceededLimits : .fail
            }
            step.busy += FactoryUnit.measurementTime(m, base: config.timing.factoryMeasurement)
            let value = unit.measurement(m, read: measurementsTaken, battery: settings.batteryPercent, storedCalibration: record.calibration)
            measurementsTaken &+= 1
            return .ok(FactoryMeasurement.hundredthsCodec.encode(FactoryMeasurement.hundredths(value)))
        case .diagAncStartCalibration:
            guard inBootloader else { return .notSupported }
            guard !record.locked else { return .notSupported }
            if isRead {
                let status: CalibrationStatus = bootloader.measuredCalibration.map { .measured($0) }
                    ?? record.calibration.map { .stored($0) } ?? .none
                return .ok(CalibrationStatus.codec.encode(status))
            }
            guard bootloader.isAuthenticated else { return .fail }
            step.busy += config.timing.ancCalibration
            bootloader.measuredCalibration = unit.calibration
            return .ok()
        default:
            return nil
        }
    }

    /// The Bluetooth name of a unit no one named yet.
    static let blankBluetoothName = "Tuneup Sim"

    /// A factory write: bootloader only, not locked, authenticated; `change` decodes the argument (a bad one →
    /// Fail, a value out of range → ExceededLimits) and edits the record, which is then appended to flash.
    private mutating func factoryWrite(_ request: Packet, inBootloader: Bool, record: FactoryRecord, step: inout Step,
                                       _ change: (inout FactoryRecord) throws(LightXError) -> Void) -> Outcome {
        guard inBootloader, !record.locked else { return .notSupported }
        guard bootloader.isAuthenticated else { return .fail }
        var next = record
        do {
            try change(&next)
        } catch {
            return error.code == .valueOutOfRange ? .exceededLimits : .fail
        }
        return append(next, step: &step)
    }

    /// Appends `record` (next sequence) to the factory-data ring; Ok when it reads back whole.
    private mutating func append(_ record: FactoryRecord, step: inout Step) -> Outcome {
        let latest = FactoryRecord.latest(in: flash)
        var next = record
        next.sequence = (latest?.record.sequence ?? 0) &+ 1
        let plan = FactoryRecord.ring.plan(afterSlot: latest?.slot, in: flash)
        if let sector = plan.eraseSectorAt {
            let op = flash.eraseSector(containing: sector)
            step.record(op)
            guard op.status == .ok else { return .fail }
        }
        let op = flash.program(at: plan.address, next.encoded)
        step.record(op)
        guard op.status == .ok else { return .fail }
        let (back, busy) = flash.read(at: plan.address, count: FactoryRecord.size)
        step.busy += busy
        return FactoryRecord(decoding: back[...]) == next ? .ok() : .fail
    }
}
