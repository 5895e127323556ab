import LightX

/// The signing policy of `tuneup image sign` and `verify` (docs/cli.md): what a payload may be, where the version,
/// model and region come from, what is refused and what is only warned about, what a verification checks.
public enum ImageSigning {
    /// An image signed, with what the policy decided.
    public struct Signed: Sendable {
        public var image: MCUbootImage
        public var version: ImageVersion
        /// The model of the 0xA0 TLV (nil: none).
        public var model: String?
        /// The region of the 0xA1 TLV (nil: none).
        public var region: FlashRegion?
        /// What the signer should hear about without it failing, in order (a version or model that differs from
        /// the manifest's, an image too large for its region, no region TLV).
        public var warnings: [String]
    }

    /// Signs `payload` (raw or Intel HEX bytes of the file `name`) into an MCUboot image with `key` (nil: unsigned,
    /// SHA-256 only). The version, model and region default to the payload manifest's (its version, its model, `app`);
    /// a `version` or `model` given that differs from the manifest's is used and warned about.
    /// `output` is the name the image will be written as (in the warnings).
    /// - Throws: `.badHex` for a broken Intel HEX payload, `.badHeader` for a payload that is already an MCUboot
    ///   image, `.noVersion` when no version is given and the payload has no manifest.
    public static func sign(payload: [UInt8], name: String, key: SigningKey?, version: ImageVersion?, model: String?,
                            region: FlashRegion?, headerSize: Int, output: String) throws(ImageError) -> Signed {
        var bytes = payload
        if !MCUbootImage.hasMagic(bytes) && IntelHex.looksLikeHex(bytes) {
            do throws(ImageError) {
                bytes = try IntelHex.decode(String(decoding: bytes, as: UTF8.self)).bytes
            } catch {
                throw error.naming(name)
            }
        }
        if MCUbootImage.hasMagic(bytes) {
            throw ImageError(.badHeader, "\(name): is already an MCUboot image; sign its payload instead")
        }
        let manifest = AppManifest.find(in: bytes)
        guard let imageVersion = version ?? manifest?.imageVersion else {
            throw ImageError(.noVersion, "\(name) has no application manifest to take the version from; give --version")
        }
        var warnings: [String] = []
        if let manifest, let mv = manifest.imageVersion, mv != imageVersion {
            warnings.append("--version \(imageVersion) differs from the payload manifest's version \(manifest.version)")
        }
        let imageModel = model ?? manifest?.model
        if let manifest, let model, model != manifest.model {
            warnings.append("--model \(model) differs from the payload manifest's model \(manifest.model)")
        }
        let imageRegion = region ?? (manifest != nil ? .application : nil)
        let image = MCUbootImage.sign(payload: bytes, version: imageVersion, model: imageModel, region: imageRegion, key: key,
                                      headerSize: headerSize)
        if let imageRegion, image.bytes.count > imageRegion.maxSize {
            warnings.append("the \(image.bytes.count)-byte image does not fit the \(imageRegion.rawValue) region (\(imageRegion.maxSize) bytes); tuneup flash will refuse it")
        }
        if imageRegion == nil {
            warnings.append("no region TLV: flashing \(output) will need --region app|resource")
        }
        return Signed(image: image, version: imageVersion, model: imageModel, region: imageRegion, warnings: warnings)
    }

    /// What a verification checked.
    public struct Verified: Sendable {
        /// The region the size was checked against (the one given, else the image's region TLV; nil: none).
        public var region: FlashRegion?
        /// Whether a signature was checked against a key.
        public var signatureChecked: Bool
    }

    /// Checks `file` as `tuneup flash` would: its structure, SHA-256, with `key` its signature, and that it fits
    /// `region` (default: its region TLV; with no region the size is not checked). A raw or Intel HEX image passes
    /// without a key (there is nothing to verify) and is refused with one.
    /// - Throws: `.badHash`, `.unsigned`, `.badSignature`, `.wrongKey`, `.tooLarge`, `.noRegion` (a region that
    ///   contradicts the image's own), each naming the file.
    public static func verify(_ file: ImageFile, key: VerificationKey?, region: FlashRegion?) throws(ImageError) -> Verified {
        let resolved = region ?? file.mcuboot?.region
        if let resolved {
            // The region and size rules of tuneup flash.
            try FirmwareImage(file: file, region: resolved).verify(with: key)
        } else if let mcuboot = file.mcuboot {
            do throws(ImageError) { try mcuboot.verify(with: key) } catch { throw error.naming(file.name) }
        } else if key != nil {
            throw ImageError(.unsigned, "\(file.name): is \(file.format == .intelHex ? "an Intel HEX" : "a raw") image without a signature, but a key is required")
        }
        return Verified(region: resolved, signatureChecked: key != nil && file.mcuboot != nil)
    }

    /// The bytes of an image file named `path`: Intel HEX at `hexBase` when the name ends in .hex, else `bytes`.
    public static func fileBytes(_ bytes: [UInt8], for path: String, hexBase: UInt32) -> [UInt8] {
        path.lowercased().hasSuffix(".hex") ? Array(IntelHex.encode(bytes, base: hexBase).utf8) : bytes
    }
}
