import LightX

/// An image ready for the updater: detected format, resolved region, checked size. What the updater flashes.
///
/// Contract: `bytes` is exactly what to write at offset 0 of `region` and never exceeds `region.maxSize`. The
/// hash and signature are not checked here; call `verify(with:)` (the updater does before touching the device).
public struct FirmwareImage: Sendable {
    /// The file name for messages.
    public let name: String
    /// The file's container format (an Intel HEX file carrying an MCUboot image is `.intelHex`, `mcuboot` set).
    public let format: ImageFormat
    /// The target region.
    public let region: FlashRegion
    /// Exactly what to write at offset 0 of the region.
    public let bytes: [UInt8]
    /// The MCUboot structure, when the image is one.
    public let mcuboot: MCUbootImage?
    /// The simulated-application manifest at the start of the payload, when present.
    public let manifest: AppManifest?

    /// MCUboot header version, else the manifest's.
    public var version: ImageVersion? { mcuboot?.version ?? manifest?.imageVersion }
    /// Custom TLV, else the manifest's.
    public var model: String? { mcuboot?.model ?? manifest?.model }

    /// Detects the format (MCUboot magic, Intel HEX text, else raw). Region: `region` if given, else the
    /// image's region TLV; a raw/hex image without one throws .noRegion ("give --region app|resource").
    /// Throws .tooLarge when bytes exceed region.maxSize. Errors name the file.
    ///
    /// Also throws `.noRegion` when `region` contradicts the image's region TLV, `.io` when the file cannot be
    /// read, and the decoding errors of `ImageFile`.
    public static func load(path: String, region: FlashRegion? = nil) throws(ImageError) -> FirmwareImage {
        try FirmwareImage(file: ImageFile.load(path: path), region: region)
    }

    /// As `load(path:region:)`, from bytes already in memory; `name` is used in messages.
    public init(bytes: [UInt8], name: String, region: FlashRegion?) throws(ImageError) {
        try self.init(file: ImageFile(bytes: bytes, name: name), region: region)
    }

    /// Resolves the region of a decoded file and checks the size (see `load(path:region:)`).
    public init(file: ImageFile, region: FlashRegion?) throws(ImageError) {
        let own = file.mcuboot?.region
        let resolved: FlashRegion
        switch (region, own) {
        case let (given?, own?) where given != own:
            throw ImageError(.noRegion, "\(file.name): is an image for the \(own.rawValue) region, not \(given.rawValue)")
        case let (given?, _): resolved = given
        case let (nil, own?): resolved = own
        case (nil, nil):
            let what = file.mcuboot == nil ? (file.format == .intelHex ? "an Intel HEX image" : "a raw image") : "an MCUboot image without a region TLV"
            throw ImageError(.noRegion, "\(file.name): is \(what), so its flash region is unknown; give --region app|resource")
        }
        guard file.bytes.count <= resolved.maxSize else {
            throw ImageError(.tooLarge, "\(file.name): \(file.bytes.count) bytes do not fit the \(resolved.rawValue) region (\(resolved.maxSize) bytes)")
        }
        name = file.name
        format = file.format
        self.region = resolved
        bytes = file.bytes
        mcuboot = file.mcuboot
        manifest = file.manifest
    }

    /// Checks integrity and, with a key, the signature (`MCUbootImage.verify(with:)`), naming the file. A raw or
    /// Intel HEX image without MCUboot structure passes without a key and throws `.unsigned` with one.
    public func verify(with key: VerificationKey?) throws(ImageError) {
        guard let mcuboot else {
            if key != nil {
                throw ImageError(.unsigned, "\(name): is \(format == .intelHex ? "an Intel HEX" : "a raw") image without a signature, but a key is required")
            }
            return
        }
        do {
            try mcuboot.verify(with: key)
        } catch {
            throw error.naming(name)
        }
    }

    /// Sectors the image occupies: ceil(bytes / 4096).
    public var sectorCount: Int { FlashRegion.sectorCount(forLength: bytes.count) }

    /// CRC-32/JAMCRC of the image padded with 0xFF to whole sectors: what the bootloader computes over
    /// `sectorCount` freshly erased and programmed sectors (BootVerifyCRC, commit record).
    public var flashCRC: UInt32 { Self.flashCRC(of: bytes) }

    /// The flash CRC of any image bytes (also of files that are not loaded as a `FirmwareImage`).
    public static func flashCRC(of bytes: [UInt8]) -> UInt32 {
        var crc = CRC32JAMCRC()
        crc.update(bytes)
        let pad = FlashRegion.sectorCount(forLength: bytes.count) * FlashRegion.sectorSize - bytes.count
        if pad > 0 { crc.update([UInt8](repeating: 0xFF, count: pad)) }
        return crc.value
    }
}
