#if canImport(Failure)
import Failure  // tools/fuzz/speaker/run.sh compiles Speaker and Failure as one module
#endif

/// An error from encoding or decoding Speaker protocol values (control frames and messages, audio and discovery
/// datagrams), with a stable code and a one-line message. Compares by code only.
public typealias SpeakerError = CodedFailure<SpeakerErrors>

/// The categories of `SpeakerError`'s codes.
public enum SpeakerErrors: ErrorDomain {
    /// Bytes or values that do not fit the protocol: the peer's fault (or the caller's, for a value out of range).
    public static func category(of code: SpeakerError.Code) -> FailureCategory {
        .device
    }
}

extension ErrorCodeIn where Domain == SpeakerError {
    /// Fewer bytes than the layout needs.
    public static var truncated: Self { Self(rawValue: "truncated") }
    /// Bytes left over after the layout was read (a payload or datagram longer than its message).
    public static var trailingBytes: Self { Self(rawValue: "trailing-bytes") }
    /// A frame or datagram longer than the protocol's maximum, or a length field above it.
    public static var tooLarge: Self { Self(rawValue: "too-large") }
    /// The first bytes are not the magic of this kind of frame or datagram.
    public static var badMagic: Self { Self(rawValue: "bad-magic") }
    /// A protocol version this codec does not speak.
    public static var unsupportedVersion: Self { Self(rawValue: "unsupported-version") }
    /// A message or packet type this version does not define.
    public static var unknownType: Self { Self(rawValue: "unknown-type") }
    /// The CRC-32 does not match the bytes.
    public static var badChecksum: Self { Self(rawValue: "bad-checksum") }
    /// A request id that the message's kind forbids (0 on a request or reply, non-zero on an event).
    public static var badRequestId: Self { Self(rawValue: "bad-request-id") }
    /// A field outside its range, an undefined enumeration value, a bad flag or boolean byte.
    public static var valueOutOfRange: Self { Self(rawValue: "value-out-of-range") }
    /// Text that is not UTF-8 or is longer than 255 bytes.
    public static var badText: Self { Self(rawValue: "bad-text") }
    /// Encoded audio (a FLAC frame) that does not decode to the frames its datagram says.
    public static var badAudio: Self { Self(rawValue: "bad-audio") }

    /// The codes this version knows (others may come from newer modules).
    public static var allCases: [Self] {
        [.truncated, .trailingBytes, .tooLarge, .badMagic, .unsupportedVersion, .unknownType, .badChecksum,
         .badRequestId, .valueOutOfRange, .badText, .badAudio]
    }
}
