import Failure
/// An error reading, checking or building a firmware image, key or manifest.
///
/// Contract: `code` is a stable classification scripts and tests can rely on; `message` is one line that names
/// the file (when there is one) and says what is wrong. Errors compare and hash by `code` only, so tests can
/// write `#expect(throws: ImageError(.badHash))`.
public typealias ImageError = CodedFailure<ImageErrors>

/// The categories of `ImageError`'s codes.
public enum ImageErrors: ErrorDomain {
    /// A file that cannot be read or written is local; a missing version is the caller's to give; a bad image, key or
    /// manifest is refused like a device.
    public static func category(of code: ImageError.Code) -> FailureCategory {
        code == .io ? .localFile : code == .noVersion || code == .exists ? .usage : .device
    }
}

extension ImageError {
    /// The same error with `name: ` in front of the message, unless the message already starts with it.
    public func naming(_ name: String) -> ImageError {
        guard !name.isEmpty, !message.hasPrefix(name + ":") else { return self }
        return ImageError(code, "\(name): \(message)")
    }
}

extension ErrorCodeIn where Domain == ImageError {

    /// A file could not be read or written.
    public static var io: Self { Self(rawValue: "io") }
    /// A file to write exists and may not be replaced (a usage error: say to replace it).
    public static var exists: Self { Self(rawValue: "exists") }
    /// The data ends before a structure it announces (header, payload, TLV area, record).
    public static var truncated: Self { Self(rawValue: "truncated") }
    /// An MCUboot image without the 0x96f3b83d magic.
    public static var badMagic: Self { Self(rawValue: "bad-magic") }
    /// An MCUboot header with impossible or unsupported fields (header size, flags).
    public static var badHeader: Self { Self(rawValue: "bad-header") }
    /// A malformed TLV area: wrong info magic, inconsistent sizes, bad record lengths, duplicates, bad values.
    public static var badTLV: Self { Self(rawValue: "bad-tlv") }
    /// The SHA-256 TLV is missing or does not match the image contents.
    public static var badHash: Self { Self(rawValue: "bad-hash") }
    /// A key is required but the image carries no Ed25519 signature.
    public static var unsigned: Self { Self(rawValue: "unsigned") }
    /// The Ed25519 signature does not verify with the key.
    public static var badSignature: Self { Self(rawValue: "bad-signature") }
    /// The image says (through its KEYHASH or PUBKEY TLV) that another key signed it.
    public static var wrongKey: Self { Self(rawValue: "wrong-key") }
    /// The image does not fit its flash region.
    public static var tooLarge: Self { Self(rawValue: "too-large") }
    /// The target region is unknown (raw or Intel HEX without `--region`), or contradicts the image's own.
    public static var noRegion: Self { Self(rawValue: "no-region") }
    /// Malformed Intel HEX text.
    public static var badHex: Self { Self(rawValue: "bad-hex") }
    /// A key that cannot be used: not PEM, not Ed25519, encrypted, or public where a private key is needed.
    public static var badKey: Self { Self(rawValue: "bad-key") }
    /// A simulated-application manifest that is missing, malformed or out of range.
    public static var badManifest: Self { Self(rawValue: "bad-manifest") }
    /// Signing needs an image version and none was given: the payload has no manifest to take it from (a usage
    /// error, exit 64).
    public static var noVersion: Self { Self(rawValue: "no-version") }

    /// The codes this version knows (others may come from newer modules).
    public static var allCases: [Self] { [.io, .truncated, .badMagic, .badHeader, .badTLV, .badHash, .unsigned, .badSignature, .wrongKey, .tooLarge, .noRegion, .badHex, .badKey, .badManifest, .noVersion, .exists] }
}
