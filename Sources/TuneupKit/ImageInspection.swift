import Firmware
import Foundation
import LightX

/// What an image holds, as `tuneup image inspect` (and `image sign --format json`) reports it: format, size and
/// sectors, region fit, version, model, the MCUboot header and TLVs, whether the hash (and, given a key, the
/// signature) checks out, and the simulated application's manifest. A corrupted hash or signature is part of the
/// report, not an error.
public struct ImageInspection: Encodable, Sendable {
    public struct TLV: Encodable, Sendable {
        public var type: String
        public var name: String
        public var length: Int
        public var protected: Bool
        public var value: String
    }

    public struct MCUboot: Encodable, Sendable {
        public var headerSize: Int
        public var payloadSize: Int
        public var protectedTLVSize: Int
        public var loadAddress: String
        public var flags: String
        public var trailingBytes: Int
        public var tlvs: [TLV]
    }

    public var file: String
    public var format: ImageFormat
    public var size: Int
    public var hexBase: String?
    public var region: String?
    public var regionMaxSize: Int?
    public var fitsRegion: Bool?
    public var sectors: Int
    public var flashCRC: String
    public var version: ImageVersion?
    public var model: String?
    public var signed: Bool
    public var hashOK: Bool?
    public var hashError: String?
    public var keyHash: String?
    public var signatureOK: Bool?
    public var signatureError: String?
    public var mcuboot: MCUboot?
    public var manifest: AppManifest?

    /// Inspects the image at `path`, checking its signature against the key PEM at `keyPath` when given and its size
    /// against `region` (default: the image's region TLV). Throws `ImageError` when a file cannot be read or the
    /// image's structure cannot be parsed.
    public static func inspect(path: String, keyPath: String?, region: FlashRegion?) throws -> ImageInspection {
        let verificationKey = try keyPath.map { try VerificationKey.load(path: $0) }
        let file = try ImageFile.load(path: path)
        return ImageInspection(file: file, region: region ?? file.mcuboot?.region, key: verificationKey)
    }

    /// The report of `file`, sized against `region`, its signature checked against `key` when given.
    public init(file: ImageFile, region: FlashRegion?, key: VerificationKey?) {
        let m = file.mcuboot
        self.file = file.name
        format = file.format
        size = file.bytes.count
        hexBase = file.hexBase.map { "0x" + String($0, radix: 16) }
        self.region = region?.rawValue
        regionMaxSize = region?.maxSize
        fitsRegion = region.map { file.bytes.count <= $0.maxSize }
        sectors = FlashRegion.sectorCount(forLength: file.bytes.count)
        flashCRC = String(format: "0x%08x", FirmwareImage.flashCRC(of: file.bytes))
        version = m?.version ?? file.manifest?.imageVersion
        model = m?.model ?? file.manifest?.model
        signed = m?.isSigned ?? false
        keyHash = m?.keyHash.map(hexString)
        manifest = file.manifest
        if let m {
            (hashOK, hashError) = Self.outcome { () throws(ImageError) in try m.verify(with: nil) }
            if let key {
                (signatureOK, signatureError) = Self.outcome { () throws(ImageError) in try m.verify(with: key) }
            }
            mcuboot = MCUboot(
                headerSize: m.headerSize, payloadSize: m.payloadSize, protectedTLVSize: m.protectedTLVSize,
                loadAddress: "0x" + String(m.loadAddress, radix: 16), flags: "0x" + String(m.flags, radix: 16),
                trailingBytes: m.trailingSize,
                tlvs: m.tlvs.map { t in
                    TLV(type: "0x" + String(t.type, radix: 16), name: MCUbootImage.tlvName(t.type), length: t.value.count,
                        protected: t.isProtected,
                        value: [MCUbootImage.modelTLV, MCUbootImage.regionTLV].contains(t.type) && t.isProtected
                            ? String(decoding: t.value, as: UTF8.self) : hexString(t.value.prefix(64)))
                })
        }
    }
}

extension ImageInspection {
    /// Whether `check` passed, and why not.
    fileprivate static func outcome(_ check: () throws(ImageError) -> Void) -> (Bool, String?) {
        do {
            try check()
            return (true, nil)
        } catch {
            return (false, error.message)
        }
    }
}

/// Lowercase hex digits of `bytes`, two per byte.
func hexString<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
    bytes.map { String(format: "%02x", $0) }.joined()
}
