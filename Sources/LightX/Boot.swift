/// A flash region the bootloader can update (sheet §6.2).
public enum FlashRegion: String, Sendable, Hashable, CaseIterable, Codable {
    /// The application image: 512 KiB, erased with 0x26, written with 0x27, read with 0x28, committed with 0x29.
    case application = "app"
    /// The resource image: 1280 KiB (Resource-1 256 KiB + Resource-2 1 MiB), through the Rsrc1 commands.
    case resource

    /// Flash erase unit.
    public static let sectorSize = 4096
    /// Program and read unit: one packet buffer.
    public static let blockSize = 256

    /// The largest image the region holds on normal devices.
    public var maxSize: Int {
        switch self {
        case .application: return 512 * 1024
        case .resource: return 1280 * 1024
        }
    }
    /// The address of the region's version file, read with BootReadVersionFile (§4.15).
    public var versionFileAddress: UInt32 {
        switch self {
        case .application: return 0x04_0000
        case .resource: return 0x0C_0000
        }
    }
    public var eraseCommand: Command { self == .application ? .bootEraseImageSector : .bootEraseRsrc1Sector }
    public var writeCommand: Command { self == .application ? .bootWriteImage : .bootWriteRsrc1 }
    public var readCommand: Command { self == .application ? .bootReadImage : .bootReadRsrc1 }

    /// The region whose erase, write or read command this is (Rsrc2 commands count as resource).
    public static func forCommand(_ command: Command) -> FlashRegion? {
        switch command {
        case .bootEraseImageSector, .bootWriteImage, .bootReadImage: return .application
        case .bootEraseRsrc1Sector, .bootWriteRsrc1, .bootReadRsrc1,
             .bootEraseRsrc2Sector, .bootWriteRsrc2, .bootReadRsrc2: return .resource
        default: return nil
        }
    }

    /// Sectors covering `length` bytes (rounded up).
    public static func sectorCount(forLength length: Int) -> Int { (length + sectorSize - 1) / sectorSize }
}

/// The bootloader authentication handshake (sheet §5).
public enum Authentication {
    /// Challenge bytes used.
    public static let challengeLength = 16
    /// The XOR key of the reference ("insecure") method.
    public static let xorKey: UInt8 = 0x5D

    /// `challenge[i] XOR 0x5D` for the first 16 bytes. Throws `.truncated` when the challenge is shorter than
    /// 16 bytes (the reference host silently answered 16 zero bytes instead).
    public static func response<C: Collection>(to challenge: C) throws(LightXError) -> [UInt8] where C.Element == UInt8 {
        guard challenge.count >= challengeLength else {
            throw LightXError(.truncated, "authentication challenge has \(challenge.count) bytes, expected 16")
        }
        return challenge.prefix(challengeLength).map { $0 ^ xorKey }
    }
}

/// Builders and reply decoders for the Boot commands (sheet §4.15, §6). Values are little-endian u32.
public enum BootRequests {
    /// Read BootImageType (0x20). Reply byte 0 = 0 means the bootloader is running.
    public static func imageType(_ style: RequestStyle = .spp) -> Packet { try! style.request(.read, .bootImageType) }
    /// Whether a BootImageType reply says the bootloader is running. Throws `.truncated` on an empty reply.
    public static func isBootloader(imageTypeReply buffer: ArraySlice<UInt8>) throws(LightXError) -> Bool {
        guard let first = buffer.first else { throw LightXError(.truncated, "boot image type reply is empty") }
        return first == 0
    }

    /// Read BootAuthStatus (0x22). Reply byte 0 = 1 means authenticated.
    public static func authStatus(_ style: RequestStyle = .spp) -> Packet { try! style.request(.read, .bootAuthStatus) }
    /// Whether a BootAuthStatus reply says the host is authenticated.
    public static func isAuthenticated(authStatusReply buffer: ArraySlice<UInt8>) throws(LightXError) -> Bool {
        guard let first = buffer.first else { throw LightXError(.truncated, "authentication status reply is empty") }
        return first == 1
    }
    /// Read BootAuthChallenge (0x23).
    public static func authChallenge(_ style: RequestStyle = .spp) -> Packet { try! style.request(.read, .bootAuthChallenge) }
    /// Write BootAuthResponse (0x24) with a 16-byte response.
    public static func authResponse(_ response: [UInt8], _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        guard response.count == Authentication.challengeLength else {
            throw LightXError(.valueOutOfRange, "authentication response must be 16 bytes, got \(response.count)")
        }
        return try style.request(.write, .bootAuthResponse, argument: response)
    }

    /// Write AppShutdown (0x7F) with the default buffer.
    public static func appShutdown(_ style: RequestStyle = .spp) -> Packet { try! style.request(.write, .appShutdown) }
    /// Write BootJumpToBootloader (0x25) with the default buffer.
    public static func jumpToBootloader(_ style: RequestStyle = .spp) -> Packet { try! style.request(.write, .bootJumpToBootloader) }
    /// Write BootJumpToApplication (0x2A) with the default buffer.
    public static func jumpToApplication(_ style: RequestStyle = .spp) -> Packet { try! style.request(.write, .bootJumpToApplication) }

    /// Erase one sector (0x26 / 0x2D): u32 sector index, address field 0 (§6.4). With `addressed` (Tuneup
    /// extension, only for devices whose capabilities say so) the address field carries the sector's offset,
    /// index × 4096, which gives every erase a distinct param0 so several can be in flight and matched.
    public static func eraseSector(_ region: FlashRegion, index: UInt32, addressed: Bool = false, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        var w = ArgumentWriter()
        w.u32(index)
        let address = addressed ? index &* UInt32(FlashRegion.sectorSize) : 0
        return try style.request(.write, region.eraseCommand, argument: w.bytes, address: address)
    }

    /// Read the bootloader's capabilities (0x3B, Tuneup extension).
    public static func capabilities(_ style: RequestStyle = .spp) -> Packet { try! style.request(.read, .bootCapabilities) }

    /// Program one block (0x27 / 0x2E) at `offset` within the region (§6.5). The data is at most 256 bytes.
    public static func writeBlock(_ region: FlashRegion, offset: UInt32, data: [UInt8], _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        try style.request(.write, region.writeCommand, argument: data, address: offset)
    }

    /// Read `count` (1...256) bytes at `offset` within the region (0x28 / 0x2F, §6.8): a zero buffer of that size.
    public static func readBlock(_ region: FlashRegion, offset: UInt32, count: Int, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        guard (1...FlashRegion.blockSize).contains(count) else {
            throw LightXError(.valueOutOfRange, "flash reads are 1...256 bytes, asked for \(count)")
        }
        return try style.request(.read, region.readCommand, argument: [UInt8](repeating: 0, count: count), address: offset)
    }

    /// BootVerifyCRC (0x2C, §6.6): [sectors, crc] for the application, [sectors, crc, base] for the resource.
    public static func verifyCRC(_ region: FlashRegion, sectors: UInt32, crc: UInt32, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        try style.request(.write, .bootVerifyCRC, argument: VerifyCRCArgument(region: region, sectors: sectors, crc: crc).encoded)
    }

    /// BootCommitImage (0x29, §6.7): u32 sector count.
    public static func commit(sectors: UInt32, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        var w = ArgumentWriter()
        w.u32(sectors)
        return try style.request(.write, .bootCommitImage, argument: w.bytes)
    }

    /// BootReadVersionFile (0x3A) for a region's version file; the reply is ASCII "major.minor.revision".
    public static func readVersionFile(address: UInt32, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        try style.request(.read, .bootReadVersionFile, address: address)
    }
}

/// The BootVerifyCRC argument (§6.6).
public struct VerifyCRCArgument: Sendable, Hashable {
    public var region: FlashRegion
    public var sectors: UInt32
    public var crc: UInt32
    /// The resource base address sent as the third word for the resource region.
    public static let resourceBaseAddress: UInt32 = 0x0C_0000

    public init(region: FlashRegion, sectors: UInt32, crc: UInt32) {
        self.region = region
        self.sectors = sectors
        self.crc = crc
    }

    /// 8 bytes for the application, 12 for the resource.
    public var encoded: [UInt8] {
        var w = ArgumentWriter()
        w.u32(sectors)
        w.u32(crc)
        if region == .resource { w.u32(Self.resourceBaseAddress) }
        return w.bytes
    }

    /// Decodes an argument: 8 bytes mean the application, 12 with the resource base mean the resource.
    public init(decoding buffer: ArraySlice<UInt8>) throws(LightXError) {
        var r = ArgumentReader(buffer, context: "verify-CRC argument")
        sectors = try r.u32("sector count")
        crc = try r.u32("CRC")
        if r.remaining >= 4 {
            let base = try r.u32("resource base")
            guard base == Self.resourceBaseAddress else {
                throw LightXError(.valueOutOfRange, "verify-CRC resource base 0x\(String(base, radix: 16)) is not 0xc0000")
            }
            region = .resource
        } else {
            region = .application
        }
    }
}

/// What a bootloader supports beyond the reference protocol (reply to 0x3B, Tuneup extension).
///
/// The reply: u32 flags, u32 queue depth; with flag bit 1 (secure boot) these are followed by the 32-byte SHA-256
/// of the Ed25519 public key it checks signatures with (SubjectPublicKeyInfo DER, as MCUboot's KEYHASH TLV holds it)
/// and its rollback floor as an MCUboot version (u8 major, u8 minor, u16 revision, u32 build): 48 bytes. Readers
/// ignore flags and bytes they do not know, so the reply can grow.
public struct BootCapabilities: Sendable, Hashable {
    /// Erase requests may carry the sector offset in their address field (distinct param0 per erase).
    public var addressedErase: Bool
    /// How many received requests the bootloader queues before answering NotReady; a host may keep this many
    /// requests in flight.
    public var queueDepth: Int
    /// What a secure-boot bootloader commits; nil when it does not check signatures (or does not say).
    public var secureBoot: SecureBootPolicy?

    public init(addressedErase: Bool, queueDepth: Int, secureBoot: SecureBootPolicy? = nil) {
        self.addressedErase = addressedErase
        self.queueDepth = queueDepth
        self.secureBoot = secureBoot
    }

    static let addressedEraseFlag: UInt32 = 1 << 0
    static let secureBootFlag: UInt32 = 1 << 1

    /// The reply: 8 bytes, 48 with secure boot.
    public var encoded: [UInt8] {
        var w = ArgumentWriter()
        w.u32((addressedErase ? Self.addressedEraseFlag : 0) | (secureBoot != nil ? Self.secureBootFlag : 0))
        w.u32(UInt32(clamping: queueDepth))
        if let secureBoot {
            let floor = secureBoot.rollbackFloor
            w.bytes(secureBoot.keyHash)
            w.u8(UInt8(truncatingIfNeeded: floor >> 56))
            w.u8(UInt8(truncatingIfNeeded: floor >> 48))
            w.u16(UInt16(truncatingIfNeeded: floor >> 32))
            w.u32(UInt32(truncatingIfNeeded: floor))
        }
        return w.bytes
    }

    public init(decoding buffer: ArraySlice<UInt8>) throws(LightXError) {
        var r = ArgumentReader(buffer, context: "boot capabilities reply")
        let flags = try r.u32("flags")
        addressedErase = flags & Self.addressedEraseFlag != 0
        queueDepth = Int(try r.u32("queue depth"))
        secureBoot = nil
        if flags & Self.secureBootFlag != 0 {
            let hash = try r.bytes(SecureBootPolicy.keyHashLength, "key hash")
            let floor = UInt64(try r.u8("floor major")) << 56 | UInt64(try r.u8("floor minor")) << 48
                | UInt64(try r.u16("floor revision")) << 32 | UInt64(try r.u32("floor build"))
            secureBoot = SecureBootPolicy(keyHash: hash, rollbackFloor: floor)
        }
    }
}

/// What a secure-boot bootloader accepts (capabilities flag bit 1): images signed by one key, not older than a floor.
public struct SecureBootPolicy: Sendable, Hashable {
    public static let keyHashLength = 32
    /// SHA-256 of the public key's SubjectPublicKeyInfo DER (MCUboot's KEYHASH).
    public var keyHash: [UInt8]
    /// The lowest version it commits (a lower one is a rollback), an MCUboot version packed as
    /// major << 56 | minor << 48 | revision << 32 | build, so that versions compare as numbers
    /// (`ImageVersion(packed:)` in Firmware); 0 when nothing was committed.
    public var rollbackFloor: UInt64

    public init(keyHash: [UInt8], rollbackFloor: UInt64) {
        self.keyHash = keyHash
        self.rollbackFloor = rollbackFloor
    }
}

/// Why a Tuneup device refused a request, carried in the buffer of its Fail reply (extension; the reference
/// protocol's Fail replies carry no buffer, so an older host just sees Fail).
public enum BootRefusalReason: String, Sendable, Hashable, CaseIterable {
    /// Another host's update owns the device: it authenticated and has sent boot commands within the last few
    /// seconds, on a link that is still open. Buffer "BUSY" (42 55 53 59).
    case busy = "BUSY"

    /// The reply buffer.
    public var encoded: [UInt8] { Array(rawValue.utf8) }

    /// The reason a reply with `status` and `buffer` gives, if it is a Fail that gives one.
    public init?(status: Status, buffer: ArraySlice<UInt8>) {
        guard status == .fail, let reason = Self.allCases.first(where: { buffer.elementsEqual($0.encoded) }) else { return nil }
        self = reason
    }

    /// The reason `reply` gives, if it is a Fail that gives one.
    public init?(reply: Packet) { self.init(status: reply.status, buffer: reply.buffer) }
}
