import Firmware
import LightX

/// The bootloader's RAM: authentication and the last successful CRC verification per region. Lost by every reset
/// (authentication survives the jump in from the application).
struct Bootloader: Sendable, Hashable {
    /// A successful BootVerifyCRC: the first `sectors` sectors of the region have CRC `crc`.
    struct Verification: Sendable, Hashable {
        var sectors: UInt32
        var crc: UInt32
    }

    var isAuthenticated = false
    /// The outstanding challenge; consumed by the next response.
    var challenge: [UInt8]?
    /// Cleared for a region by every erase or write to it and by a failed verification of it.
    var verified: [FlashRegion: Verification] = [:]
    /// A factory unit's ANC calibration measured (0x71) and not yet stored (0x72).
    var measuredCalibration: AncCalibration?

    init(isAuthenticated: Bool = false, verified: [FlashRegion: Verification] = [:]) {
        self.isAuthenticated = isAuthenticated
        self.verified = verified
    }
}

/// The bootloader's command set (design note, "Device behaviour"; sheet §4.15, §5, §6). Every request gets exactly
/// one final reply (never Pending):
///
/// - destination other than 0x40 → NotFound; opcode other than Read/Write, the wrong direction, App, Diagnostic and
///   undefined Boot commands (and the Rsrc2 commands 0x30-0x32: this model addresses the whole resource region with
///   the Rsrc1 commands) → NotSupported; an argument too short → Fail.
/// - 0x20 image type → [0]; 0x22/0x23/0x24 authentication as in the application; 0x25 → Ok (already here, no reset).
/// - Boot writes that change flash or run code — erase, write, commit, jump to application — before authentication
///   → Fail.
/// - 0x26/0x2D erase: u32 sector index; param0 address 0 or index × 4096 ("addressed erase"), otherwise, or an index
///   past the region → ExceededLimits. One sector-erase time.
/// - 0x27/0x2E write: param0 = offset in the region, 1...256 data bytes inside the region (else ExceededLimits);
///   programmed page by page and read back; Fail when flash does not then equal the data (area not erased).
/// - 0x28/0x2F read: param0 = offset, count = request buffer length (1...256) inside the region → the bytes.
/// - 0x2C verify: [sectors, crc] (application) or [sectors, crc, 0xC0000] (resource); sectors 1...region sectors
///   (else ExceededLimits; another resource base → ExceededLimits); Ok when the CRC-32/JAMCRC of those sectors equals
///   crc (remembered for commit), else Fail.
/// - 0x29 commit: u32 sectors (1...128); needs the remembered application verification with the same sector count
///   and no change to the region since (else Fail). With secure boot the image must verify with the key and its
///   version be ≥ the last committed one (rollback → Fail). Appends a commit record (a page program, plus a sector
///   erase when the log moves to its next sector).
/// - 0x2A jump to application: Fail without a bootable committed application; else Ok and the device resets into it.
/// - 0x3A version file: 0x000000 the bootloader's version, 0x040000 the bootable committed application's, 0x0C0000
///   the resource image's MCUboot version; otherwise, or when there is none, NotFound.
/// - 0x3B capabilities (Tuneup extension, read) → u32 flags (bit 0: addressed erase, bit 1: secure boot), u32 queue
///   depth; with secure boot also the key's 32-byte hash (MCUboot KEYHASH) and the rollback floor (the last commit
///   record's version; u8 major, u8 minor, u16 revision, u32 build).
extension DeviceMachine {
    mutating func handleInBootloader(_ request: Packet, now: ContinuousClock.Instant, step: inout Step) -> Outcome {
        guard request.header.destination == .application else { return .notFound }
        guard request.opcode == .read || request.opcode == .write else { return .notSupported }
        let isRead = request.opcode == .read
        if let outcome = factoryOutcome(request, inBootloader: true, step: &step) { return outcome }
        switch request.command.group {
        case .config: return ApplicationFirmware.configOutcome(request, identity: settings.identity)
        case .boot: break
        case .reserved, .diagnostic, .app, .push: return .notSupported
        }
        switch request.command {
        case .bootImageType:
            return isRead ? .ok([0]) : .notSupported
        case .bootAuthChallenge:
            guard isRead else { return .notSupported }
            let challenge = ApplicationFirmware.makeChallenge(from: &random)
            bootloader.challenge = challenge
            bootloader.isAuthenticated = false
            return .ok(challenge)
        case .bootAuthResponse:
            guard !isRead else { return .notSupported }
            bootloader.isAuthenticated = ApplicationFirmware.isValidResponse(request.buffer, to: bootloader.challenge)
            bootloader.challenge = nil
            return bootloader.isAuthenticated ? .ok() : .fail
        case .bootAuthStatus:
            return isRead ? .ok([bootloader.isAuthenticated ? 1 : 0]) : .notSupported
        case .bootJumpToBootloader:
            return isRead ? .notSupported : .ok()
        case .bootEraseImageSector, .bootEraseRsrc1Sector:
            guard !isRead else { return .notSupported }
            return erase(request.command == .bootEraseImageSector ? .application : .resource, request, step: &step)
        case .bootWriteImage, .bootWriteRsrc1:
            guard !isRead else { return .notSupported }
            return write(request.command == .bootWriteImage ? .application : .resource, request, step: &step)
        case .bootReadImage, .bootReadRsrc1:
            guard isRead else { return .notSupported }
            return read(request.command == .bootReadImage ? .application : .resource, request, step: &step)
        case .bootVerifyCRC:
            guard !isRead else { return .notSupported }
            return verify(request, step: &step)
        case .bootCommitImage:
            guard !isRead else { return .notSupported }
            return commit(request, step: &step)
        case .bootJumpToApplication:
            guard !isRead else { return .notSupported }
            return jumpToApplication(now: now, step: &step)
        case .bootReadVersionFile:
            guard isRead else { return .notSupported }
            return versionFile(request.address, step: &step)
        case .bootCapabilities:
            guard isRead else { return .notSupported }
            return .ok(capabilities.encoded)
        default:
            return .notSupported
        }
    }

    /// The 0x3B reply: addressed erase, the queue depth and, with secure boot, the key's hash and the rollback floor
    /// (the version of the last commit record: commit refuses anything older).
    var capabilities: BootCapabilities {
        let policy = config.secureBootKey.map { key in
            SecureBootPolicy(keyHash: key.keyHash, rollbackFloor: CommitLog.latest(in: flash)?.record.version.packed ?? 0)
        }
        return BootCapabilities(addressedErase: true, queueDepth: config.queueDepth, secureBoot: policy)
    }

    // MARK: - Flash commands

    private mutating func erase(_ region: FlashRegion, _ request: Packet, step: inout Step) -> Outcome {
        guard bootloader.isAuthenticated else { return .fail }
        var reader = ArgumentReader(request.buffer, context: "erase request")
        guard let index = try? reader.u32("sector index") else { return .fail }
        guard Int(index) < FlashMap.sectorCount(of: region) else { return .exceededLimits }
        let offset = Int(index) * FlashMap.sectorSize
        guard request.address == 0 || Int(request.address) == offset else { return .exceededLimits }
        regionChanged(region)
        let op = flash.eraseSector(containing: FlashMap.range(of: region).lowerBound + offset)
        step.record(op)
        return op.status == .ok ? .ok() : .fail
    }

    private mutating func write(_ region: FlashRegion, _ request: Packet, step: inout Step) -> Outcome {
        guard bootloader.isAuthenticated else { return .fail }
        let data = request.buffer
        guard !data.isEmpty else { return .fail }
        let area = FlashMap.range(of: region)
        let offset = Int(request.address)
        guard offset + data.count <= area.count else { return .exceededLimits }
        regionChanged(region)
        var position = offset
        var next = data.startIndex
        while next < data.endIndex {
            let pageEnd = Swift.min(offset + data.count, (position / FlashMap.pageSize + 1) * FlashMap.pageSize)
            let n = pageEnd - position
            let op = flash.program(at: area.lowerBound + position, data[next..<(next + n)])
            step.record(op)
            guard op.status == .ok else { return .fail }
            position += n
            next += n
        }
        let (back, busy) = flash.read(at: area.lowerBound + offset, count: data.count)
        step.busy += busy
        return back.elementsEqual(data) ? .ok() : .fail
    }

    private mutating func read(_ region: FlashRegion, _ request: Packet, step: inout Step) -> Outcome {
        let count = request.buffer.count
        guard count >= 1 else { return .fail }
        let area = FlashMap.range(of: region)
        let offset = Int(request.address)
        guard offset + count <= area.count else { return .exceededLimits }
        let (bytes, busy) = flash.read(at: area.lowerBound + offset, count: count)
        step.busy += busy
        return .ok(bytes)
    }

    private mutating func verify(_ request: Packet, step: inout Step) -> Outcome {
        let argument: VerifyCRCArgument
        do {
            argument = try VerifyCRCArgument(decoding: request.buffer)
        } catch {
            return error.code == .valueOutOfRange ? .exceededLimits : .fail
        }
        let region = argument.region
        bootloader.verified[region] = nil
        let sectors = Int(argument.sectors)
        guard sectors >= 1, sectors <= FlashMap.sectorCount(of: region) else { return .exceededLimits }
        let base = FlashMap.range(of: region).lowerBound
        let (crc, busy) = flash.crc(of: base..<(base + sectors * FlashMap.sectorSize))
        step.busy += busy
        guard crc == argument.crc else { return .fail }
        bootloader.verified[region] = Bootloader.Verification(sectors: argument.sectors, crc: crc)
        return .ok()
    }

    private mutating func commit(_ request: Packet, step: inout Step) -> Outcome {
        guard bootloader.isAuthenticated else { return .fail }
        var reader = ArgumentReader(request.buffer, context: "commit request")
        guard let sectors = try? reader.u32("sector count") else { return .fail }
        guard sectors >= 1, Int(sectors) <= FlashMap.sectorCount(of: .application) else { return .exceededLimits }
        guard let verification = bootloader.verified[.application], verification.sectors == sectors else { return .fail }
        let base = FlashMap.application.lowerBound
        let range = base..<(base + Int(sectors) * FlashMap.sectorSize)
        let bytes = flash[range]
        let latest = CommitLog.latest(in: flash)
        var version = MCUbootLayout(bytes)?.version
        if let key = config.secureBootKey {
            step.busy += config.timing.readTime(bytes: range.count)
            guard Self.isSigned(bytes, by: key), let signed = version else { return .fail }
            if let committed = latest?.record.version, signed < committed { return .fail }
        }
        if version == nil {
            version = AppManifest.find(in: Array(bytes)).flatMap { ImageVersion(parsing: $0.version) }
        }
        let record = CommitRecord(sequence: (latest?.record.sequence ?? 0) &+ 1, sectors: sectors, crc: verification.crc,
                                  version: version ?? ImageVersion(major: 0, minor: 0, revision: 0))
        let plan = CommitLog.plan(after: latest, in: flash)
        invalidateCommitted()
        if let sector = plan.eraseSectorAt {
            let op = flash.eraseSector(containing: sector)
            step.record(op)
            guard op.status == .ok else { return .fail }
        }
        let encoded = record.encoded
        let op = flash.program(at: plan.address, encoded)
        step.record(op)
        guard op.status == .ok else { return .fail }
        return CommitRecord(decoding: flash[plan.address..<(plan.address + CommitRecord.size)]) == record ? .ok() : .fail
    }

    private mutating func jumpToApplication(now: ContinuousClock.Instant, step: inout Step) -> Outcome {
        guard bootloader.isAuthenticated else { return .fail }
        let (committed, busy) = evaluateCommitted()
        step.busy += busy
        guard let committed else { return .fail }
        startApplication(committed, now: now, delayed: true)
        return .ok()
    }

    private mutating func versionFile(_ address: UInt32, step: inout Step) -> Outcome {
        switch address {
        case 0:
            return .ok(Array(settings.identity.bootVersion.utf8))
        case FlashRegion.application.versionFileAddress:
            let (committed, busy) = evaluateCommitted()
            step.busy += busy
            guard let committed else { return .notFound }
            return .ok(Array(committed.version.versionFileText.utf8))
        case FlashRegion.resource.versionFileAddress:
            guard let version = resourceVersion() else { return .notFound }
            return .ok(Array(version.versionFileText.utf8))
        default:
            return .notFound
        }
    }

    /// An erase or write to `region`: its verification is void, and so is the evaluation of the committed application.
    private mutating func regionChanged(_ region: FlashRegion) {
        bootloader.verified[region] = nil
        if region == .application { invalidateCommitted() }
    }
}
