#if canImport(Failure)
import Failure  // tools/fuzz/run.sh compiles LightX and Failure as one module
#endif
/// An error from encoding or decoding LightX values, with a stable code and a one-line message.
public typealias LightXError = CodedFailure<LightXErrors>

/// The categories of `LightXError`'s codes.
public enum LightXErrors: ErrorDomain {
    /// Bytes that do not fit the protocol: the device's (or the image's) fault.
    public static func category(of code: LightXError.Code) -> FailureCategory {
        .device
    }
}

extension ErrorCodeIn where Domain == LightXError {

    /// Fewer bytes than the layout needs.
    public static var truncated: Self { Self(rawValue: "truncated") }
    /// A buffer longer than the 256-byte maximum.
    public static var bufferTooLarge: Self { Self(rawValue: "buffer-too-large") }
    /// An address above the 24-bit field.
    public static var addressOutOfRange: Self { Self(rawValue: "address-out-of-range") }
    /// A value outside the range the protocol allows.
    public static var valueOutOfRange: Self { Self(rawValue: "value-out-of-range") }
    /// A reply whose contents do not fit the expected layout.
    public static var malformed: Self { Self(rawValue: "malformed") }

    /// The codes this version knows (others may come from newer modules).
    public static var allCases: [Self] { [.truncated, .bufferTooLarge, .addressOutOfRange, .valueOutOfRange, .malformed] }
}
