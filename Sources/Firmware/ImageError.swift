/// An error reading, checking or building a firmware image, key or manifest.
///
/// Contract: `code` is a stable classification scripts and tests can rely on; `message` is one line that names
/// the file (when there is one) and says what is wrong. Errors compare and hash by `code` only, so tests can
/// write `#expect(throws: ImageError(.badHash))`.
public struct ImageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable classification of image errors; the raw values appear in JSON output and logs.
    public enum Code: String, Sendable, Hashable, CaseIterable, Codable {
        /// A file could not be read or written.
        case io
        /// The data ends before a structure it announces (header, payload, TLV area, record).
        case truncated
        /// An MCUboot image without the 0x96f3b83d magic.
        case badMagic = "bad-magic"
        /// An MCUboot header with impossible or unsupported fields (header size, flags).
        case badHeader = "bad-header"
        /// A malformed TLV area: wrong info magic, inconsistent sizes, bad record lengths, duplicates, bad values.
        case badTLV = "bad-tlv"
        /// The SHA-256 TLV is missing or does not match the image contents.
        case badHash = "bad-hash"
        /// A key is required but the image carries no Ed25519 signature.
        case unsigned
        /// The Ed25519 signature does not verify with the key.
        case badSignature = "bad-signature"
        /// The image says (through its KEYHASH or PUBKEY TLV) that another key signed it.
        case wrongKey = "wrong-key"
        /// The image does not fit its flash region.
        case tooLarge = "too-large"
        /// The target region is unknown (raw or Intel HEX without `--region`), or contradicts the image's own.
        case noRegion = "no-region"
        /// Malformed Intel HEX text.
        case badHex = "bad-hex"
        /// A key that cannot be used: not PEM, not Ed25519, encrypted, or public where a private key is needed.
        case badKey = "bad-key"
        /// A simulated-application manifest that is missing, malformed or out of range.
        case badManifest = "bad-manifest"
    }

    /// What kind of problem this is.
    public var code: Code
    /// One line for people: names the file when known and says what is wrong.
    public var message: String

    /// An error with a code and a one-line message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// An error with only a code (useful as the expected value in tests; errors compare by code).
    public init(_ code: Code) {
        self.init(code, code.rawValue)
    }

    /// The message.
    public var description: String { message }

    /// The same error with `name: ` in front of the message, unless the message already starts with it.
    public func naming(_ name: String) -> ImageError {
        guard !name.isEmpty, !message.hasPrefix(name + ":") else { return self }
        return ImageError(code, "\(name): \(message)")
    }

    /// Errors compare by code only.
    public static func == (lhs: ImageError, rhs: ImageError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
