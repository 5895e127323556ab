/// The container format of an image file.
public enum ImageFormat: String, Sendable, Codable {
    /// Plain bytes, written as they are.
    case raw
    /// Intel HEX text (decoded to bytes; it may carry an MCUboot image).
    case intelHex = "ihex"
    /// An MCUboot image in binary.
    case mcuboot
}
