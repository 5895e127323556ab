import Firmware
import LightX

/// One commit record: "the application is the first `sectors` sectors of the app region, whose CRC-32/JAMCRC is
/// `crc`, version `version`". 32 bytes in flash, little-endian:
///
/// | offset | field |
/// |---|---|
/// | 0 | magic u32 0x544D4354 ("TCMT") |
/// | 4 | sequence u32 (the newest valid record wins) |
/// | 8 | sectors u32 |
/// | 12 | application CRC u32 |
/// | 16 | version: major u8, minor u8, revision u16, build u32 |
/// | 24 | reserved u32 (0xFFFFFFFF) |
/// | 28 | record CRC u32: CRC-32/JAMCRC of bytes 0..<28 |
///
/// A record whose magic or record CRC does not match is ignored, so a torn write (a prefix of the record) never
/// counts.
struct CommitRecord: Sendable, Hashable {
    var sequence: UInt32
    var sectors: UInt32
    var crc: UInt32
    var version: ImageVersion

    static let size = 32
    static let magic: UInt32 = 0x544D_4354

    var encoded: [UInt8] {
        var w = ArgumentWriter()
        w.u32(Self.magic)
        w.u32(sequence)
        w.u32(sectors)
        w.u32(crc)
        var bytes = w.bytes
        bytes += [version.major, version.minor, UInt8(truncatingIfNeeded: version.revision), UInt8(truncatingIfNeeded: version.revision >> 8)]
        var tail = ArgumentWriter()
        tail.u32(version.build)
        tail.u32(0xFFFF_FFFF)
        bytes += tail.bytes
        var c = ArgumentWriter()
        c.u32(CRC32JAMCRC.checksum(bytes))
        return bytes + c.bytes
    }

    init(sequence: UInt32, sectors: UInt32, crc: UInt32, version: ImageVersion) {
        self.sequence = sequence
        self.sectors = sectors
        self.crc = crc
        self.version = version
    }

    /// Decodes a 32-byte slot; nil unless magic and record CRC match.
    init?(decoding slot: ArraySlice<UInt8>) {
        guard slot.count >= Self.size else { return nil }
        let s = slot.startIndex
        var r = ArgumentReader(slot[s..<(s + Self.size)], context: "commit record")
        guard let magic = try? r.u32("magic"), magic == Self.magic,
              let sequence = try? r.u32("sequence"), let sectors = try? r.u32("sectors"), let crc = try? r.u32("crc"),
              let major = try? r.u8("major"), let minor = try? r.u8("minor"),
              let revLow = try? r.u8("revision"), let revHigh = try? r.u8("revision"),
              let build = try? r.u32("build"), (try? r.u32("reserved")) != nil,
              let recordCRC = try? r.u32("record CRC"),
              recordCRC == CRC32JAMCRC.checksum(slot[s..<(s + 28)]) else { return nil }
        self.init(sequence: sequence, sectors: sectors, crc: crc,
                  version: ImageVersion(major: major, minor: minor, revision: UInt16(revLow) | UInt16(revHigh) << 8, build: build))
    }
}

/// The commit-record log in the boot-data area (`FlashMap.bootData`, 16 sectors): an append-only ring of 32-byte
/// records. The newest valid record (highest sequence) is the committed application.
///
/// Crash safety: a record is one page program, so a power cut leaves either no record, a torn one (ignored) or the
/// whole record. Appending never erases the sector holding the newest record: records fill a sector slot by slot
/// (skipping slots left dirty by a torn write), and only when the sector is full is the *next* sector of the ring —
/// which holds the oldest records — erased. A torn erase there only damages records older than the newest.
enum CommitLog {
    static let area = FlashMap.bootData
    static let slotCount = area.count / CommitRecord.size
    static let slotsPerSector = FlashMap.sectorSize / CommitRecord.size

    struct Entry: Sendable, Hashable {
        var slot: Int
        var record: CommitRecord
    }

    /// Where the next record goes, and the sector to erase first (if any).
    struct AppendPlan: Sendable, Hashable {
        var eraseSectorAt: Int?
        var address: Int
    }

    static func address(ofSlot slot: Int) -> Int { area.lowerBound + slot * CommitRecord.size }

    /// The newest valid record.
    static func latest(in flash: NORFlash) -> Entry? {
        var best: Entry?
        let bytes = flash[area]
        for slot in 0..<slotCount {
            let start = bytes.startIndex + slot * CommitRecord.size
            // Erased slots are the common case: skip them fast.
            if bytes[start] == 0xFF && bytes[start + 3] == 0xFF { continue }
            guard let record = CommitRecord(decoding: bytes[start..<(start + CommitRecord.size)]) else { continue }
            if best == nil || record.sequence > best!.record.sequence { best = Entry(slot: slot, record: record) }
        }
        return best
    }

    /// Where to append after `latest` (see the type's description).
    static func plan(after latest: Entry?, in flash: NORFlash) -> AppendPlan {
        ring.plan(afterSlot: latest?.slot, in: flash)
    }

    static let ring = RecordRing(area: area, recordSize: CommitRecord.size)
}

/// An append-only ring of fixed-size records over whole flash sectors (the commit log, the factory data): records
/// fill a sector slot by slot, skipping slots left dirty by a torn write, and only when a sector is full is the next
/// sector of the ring — holding the oldest records — erased, so the newest record is never erased.
struct RecordRing: Sendable, Hashable {
    var area: Range<Int>
    var recordSize: Int
    var slotCount: Int { area.count / recordSize }
    var slotsPerSector: Int { FlashMap.sectorSize / recordSize }

    func address(ofSlot slot: Int) -> Int { area.lowerBound + slot * recordSize }

    /// Where the record after the one in `slot` (nil: none yet) goes, and the sector to erase first (if any).
    func plan(afterSlot latest: Int?, in flash: NORFlash) -> CommitLog.AppendPlan {
        var slot = latest.map { ($0 + 1) % slotCount } ?? 0
        for _ in 0..<slotCount {
            if slot % slotsPerSector == 0 {
                // Entering a sector: it holds the oldest records (or is blank).
                let sector = address(ofSlot: slot)..<(address(ofSlot: slot) + FlashMap.sectorSize)
                if !flash[sector].allSatisfy({ $0 == 0xFF }) {
                    return CommitLog.AppendPlan(eraseSectorAt: sector.lowerBound, address: sector.lowerBound)
                }
                return CommitLog.AppendPlan(eraseSectorAt: nil, address: sector.lowerBound)
            }
            let a = address(ofSlot: slot)
            if flash[a..<(a + recordSize)].allSatisfy({ $0 == 0xFF }) {
                return CommitLog.AppendPlan(eraseSectorAt: nil, address: a)
            }
            slot = (slot + 1) % slotCount   // a slot dirtied by a torn write
        }
        // Unreachable in practice (the loop reaches a sector start within one sector of slots); erase the first sector.
        return CommitLog.AppendPlan(eraseSectorAt: area.lowerBound, address: area.lowerBound)
    }
}

/// The fixed part of an MCUboot image header, read straight from flash (so the bootloader knows an image's length
/// and version without a full parse). Layout: magic u32 0x96f3b83d, load address u32, header size u16, protected
/// TLV size u16, image (payload) size u32, flags u32, version (u8, u8, u16, u32); the TLV areas follow the payload,
/// each starting with an info header (magic u16 0x6908 protected / 0x6907 unprotected, total length u16).
struct MCUbootLayout: Sendable, Hashable {
    var headerSize: Int
    var payloadSize: Int
    var totalSize: Int
    var version: ImageVersion

    /// Nil unless `bytes` starts with a structurally complete MCUboot image.
    init?(_ bytes: ArraySlice<UInt8>) {
        var r = ArgumentReader(bytes, context: "MCUboot header")
        guard let magic = try? r.u32("magic"), magic == MCUbootImage.magic,
              (try? r.u32("load address")) != nil,
              let hdrLow = try? r.u8("header size"), let hdrHigh = try? r.u8("header size"),
              let protLow = try? r.u8("protected TLV size"), let protHigh = try? r.u8("protected TLV size"),
              let imageSize = try? r.u32("image size"), (try? r.u32("flags")) != nil,
              let major = try? r.u8("major"), let minor = try? r.u8("minor"),
              let revLow = try? r.u8("revision"), let revHigh = try? r.u8("revision"),
              let build = try? r.u32("build") else { return nil }
        let header = Int(hdrLow) | Int(hdrHigh) << 8
        let protected = Int(protLow) | Int(protHigh) << 8
        let payload = Int(imageSize)
        guard header >= 32, payload <= bytes.count else { return nil }
        var end = header + payload
        if protected > 0 {
            guard Self.tlvInfo(bytes, at: end, magic: 0x6908) == protected else { return nil }
            end += protected
        }
        guard let unprotected = Self.tlvInfo(bytes, at: end, magic: 0x6907), unprotected >= 4 else { return nil }
        end += unprotected
        guard end <= bytes.count else { return nil }
        headerSize = header
        payloadSize = payload
        totalSize = end
        version = ImageVersion(major: major, minor: minor, revision: UInt16(revLow) | UInt16(revHigh) << 8, build: build)
    }

    /// The total length of the TLV area at `offset` when it starts with an info header with `magic`.
    private static func tlvInfo(_ bytes: ArraySlice<UInt8>, at offset: Int, magic: UInt16) -> Int? {
        guard offset >= 0, offset <= bytes.count - 4 else { return nil }
        let s = bytes.startIndex + offset
        guard UInt16(bytes[s]) | UInt16(bytes[s + 1]) << 8 == magic else { return nil }
        return Int(bytes[s + 2]) | Int(bytes[s + 3]) << 8
    }
}

extension ImageVersion {
    /// "major.minor.revision", the version-file form (§4.15); the build number is not part of it.
    var versionFileText: String { "\(major).\(minor).\(revision)" }
}
