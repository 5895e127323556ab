/// An image file decoded but not yet tied to a flash region: its format, the bytes it stands for, and the MCUboot
/// structure when it has one. `tuneup image inspect` and `FirmwareImage` build on it.
///
/// Contract: format detection looks at the content, never at the file name: MCUboot magic first, then Intel HEX
/// text (first non-blank character ':'), else raw. An Intel HEX file whose data starts with the MCUboot magic is
/// `.intelHex` with `mcuboot` set. Structural MCUboot errors are thrown (naming the file); hash and signature are
/// not checked here.
public struct ImageFile: Sendable {
    /// The file name used in messages.
    public let name: String
    /// The detected container format.
    public let format: ImageFormat
    /// The bytes the file stands for (for Intel HEX: the decoded data from its lowest address, gaps 0xFF).
    public let bytes: [UInt8]
    /// The MCUboot structure, when the bytes are an MCUboot image.
    public let mcuboot: MCUbootImage?
    /// The lowest data address of an Intel HEX file (informational: images are placed at offset 0 of their region).
    public let hexBase: UInt32?
    /// The simulated-application manifest, when the payload starts with one.
    public let manifest: AppManifest?

    /// Detects and decodes `bytes`. Throws `.truncated` for empty data, `.badHex`, and MCUboot structure errors,
    /// each naming `name`.
    public init(bytes fileBytes: [UInt8], name: String) throws(ImageError) {
        do throws(ImageError) {
            guard !fileBytes.isEmpty else { throw ImageError(.truncated, "is empty") }
            var bytes = fileBytes
            var format = ImageFormat.raw
            var base: UInt32?
            if !MCUbootImage.hasMagic(fileBytes) && IntelHex.looksLikeHex(fileBytes) {
                let decoded = try IntelHex.decode(String(decoding: fileBytes, as: UTF8.self))
                bytes = decoded.bytes
                base = decoded.base
                format = .intelHex
            }
            var mcuboot: MCUbootImage?
            if MCUbootImage.hasMagic(bytes) {
                mcuboot = try MCUbootImage(parsing: bytes)
                if format == .raw { format = .mcuboot }
            }
            self.name = name
            self.format = format
            self.bytes = bytes
            self.mcuboot = mcuboot
            self.hexBase = base
            self.manifest = try? AppManifest(decoding: mcuboot?.payload ?? bytes[...])
        } catch {
            throw error.naming(name)
        }
    }

    /// Reads and decodes a file (see `init(bytes:name:)`); `.io` when it cannot be read.
    public static func load(path: String) throws(ImageError) -> ImageFile {
        try ImageFile(bytes: FileAccess.read(path), name: path)
    }
}
