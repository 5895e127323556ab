import LightX

/// A signed image in MCUboot's format, exactly as MCUboot's bootutil and imgtool define it.
///
/// Layout (little-endian): a 32-byte header (magic 0x96f3b83d, u32 load address, u16 header size, u16 protected
/// TLV size, u32 image size, u32 flags, version {u8 major, u8 minor, u16 revision, u32 build}, u32 pad) padded to
/// `headerSize`; the payload (`payloadSize` bytes); an optional protected TLV area (info magic 0x6908, its size in
/// the header) holding the custom TLVs 0xA0 model and 0xA1 region; the unprotected TLV area (info magic 0x6907) with
/// SHA256 (0x10) over header + payload + protected TLVs, and, when signed, KEYHASH (0x01, SHA-256 of the signer's
/// SubjectPublicKeyInfo DER) and ED25519 (0x24, the Ed25519 signature of the 32-byte digest). Each TLV record is
/// u16 type, u16 length, value; each area starts with u16 magic, u16 total size (including those 4 bytes).
///
/// Contract: `init(parsing:)` checks the structure only and never traps on any input: truncated data, bad magic,
/// sizes pointing outside the data and malformed TLV areas throw an `ImageError` with a one-line message.
/// `verify(with:)` checks the hash and, with a key, the signature. Bytes after the unprotected TLV area (for example
/// imgtool's `--pad` trailer) are allowed and kept in `bytes`.
public struct MCUbootImage: Sendable {
    /// The header magic.
    public static let magic: UInt32 = 0x96f3_b83d
    /// Custom protected TLV: the UTF-8 hardware model, e.g. "TS-1".
    public static let modelTLV: UInt16 = 0xA0
    /// Custom protected TLV: the UTF-8 target region, "app" or "resource" (`FlashRegion.rawValue`).
    public static let regionTLV: UInt16 = 0xA1
    /// Size of the fixed header fields.
    public static let headerLength = 32
    /// Info magic of the unprotected TLV area.
    public static let tlvInfoMagic: UInt16 = 0x6907
    /// Info magic of the protected TLV area.
    public static let protectedTLVInfoMagic: UInt16 = 0x6908
    /// TLV: SHA-256 of the signer's SubjectPublicKeyInfo DER.
    public static let keyHashTLV: UInt16 = 0x01
    /// TLV: the signer's full SubjectPublicKeyInfo DER (imgtool `--public-key-format full`).
    public static let publicKeyTLV: UInt16 = 0x02
    /// TLV: SHA-256 of header, payload and protected TLV area.
    public static let sha256TLV: UInt16 = 0x10
    /// TLV: Ed25519 signature of the SHA-256 digest.
    public static let ed25519TLV: UInt16 = 0x24

    /// Header flag bits (imgtool's IMAGE_F).
    public enum Flags {
        /// Position-independent code.
        public static let pic: UInt32 = 0x01
        /// Payload encrypted with AES-128 (not supported here: parsing rejects it).
        public static let encryptedAES128: UInt32 = 0x04
        /// Payload encrypted with AES-256 (not supported here: parsing rejects it).
        public static let encryptedAES256: UInt32 = 0x08
        /// Not bootable on its own.
        public static let nonBootable: UInt32 = 0x10
        /// Load into RAM at the load address (imgtool sets it whenever the load address is not 0).
        public static let ramLoad: UInt32 = 0x20
        /// Built for a fixed flash address.
        public static let romFixed: UInt32 = 0x100
        /// Compressed payloads (not supported here: parsing rejects them).
        public static let compressed: UInt32 = 0x200 | 0x400 | 0x800
    }

    /// One TLV record.
    public struct TLV: Sendable, Hashable {
        /// The record type (u16; standard types are below 0x100).
        public let type: UInt16
        /// The record's value.
        public let value: [UInt8]
        /// Offset of the value in the image.
        public let offset: Int
        /// Whether it lies in the protected (hashed) area.
        public let isProtected: Bool
    }

    /// The whole image, exactly what goes to flash (including any bytes after the TLV areas).
    public let bytes: [UInt8]
    /// Header size from the header: where the payload starts.
    public let headerSize: Int
    /// Payload size from the header.
    public let payloadSize: Int
    /// The header's load address.
    public let loadAddress: UInt32
    /// The header's flags (see `Flags`).
    public let flags: UInt32
    /// The header's version.
    public let version: ImageVersion
    /// Size of the protected TLV area including its 4-byte info header, 0 when there is none.
    public let protectedTLVSize: Int
    /// All TLV records, protected ones first, in image order.
    public let tlvs: [TLV]
    /// Offset just after the unprotected TLV area: the end of the image proper.
    public let imageEnd: Int
    /// The hardware model from the protected 0xA0 TLV, nil when absent.
    public let model: String?
    /// The target region from the protected 0xA1 TLV, nil when absent.
    public let region: FlashRegion?

    /// The payload.
    public var payload: ArraySlice<UInt8> { bytes[headerSize..<(headerSize + payloadSize)] }
    /// Whether the image carries an ED25519 signature TLV.
    public var isSigned: Bool { signature != nil }
    /// The bytes the SHA-256 TLV covers: header, payload and protected TLV area.
    public var hashedRange: Range<Int> { 0..<(headerSize + payloadSize + protectedTLVSize) }
    /// The SHA-256 the image claims (SHA256 TLV), nil when absent.
    public var storedHash: [UInt8]? { unprotected(Self.sha256TLV)?.value }
    /// The KEYHASH TLV's value, nil when absent.
    public var keyHash: [UInt8]? { unprotected(Self.keyHashTLV)?.value }
    /// The ED25519 TLV's value, nil when absent.
    public var signature: [UInt8]? { unprotected(Self.ed25519TLV)?.value }
    /// SHA-256 of `hashedRange`, computed now.
    public var computedHash: [UInt8] { sha256(bytes[hashedRange]) }
    /// Bytes after the unprotected TLV area.
    public var trailingSize: Int { bytes.count - imageEnd }

    /// The first unprotected TLV of `type`.
    func unprotected(_ type: UInt16) -> TLV? { tlvs.first { !$0.isProtected && $0.type == type } }

    /// Memberwise, for `sign` and `init(parsing:)`.
    init(bytes: [UInt8], headerSize: Int, payloadSize: Int, loadAddress: UInt32, flags: UInt32, version: ImageVersion,
         protectedTLVSize: Int, tlvs: [TLV], imageEnd: Int, model: String?, region: FlashRegion?) {
        self.bytes = bytes
        self.headerSize = headerSize
        self.payloadSize = payloadSize
        self.loadAddress = loadAddress
        self.flags = flags
        self.version = version
        self.protectedTLVSize = protectedTLVSize
        self.tlvs = tlvs
        self.imageEnd = imageEnd
        self.model = model
        self.region = region
    }

    /// Whether `bytes` starts with the MCUboot magic.
    public static func hasMagic(_ bytes: [UInt8]) -> Bool { LE.u32(bytes, 0) == magic }
}
