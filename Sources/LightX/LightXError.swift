import Failure
/// An error from encoding or decoding LightX values, with a stable code and a one-line message.
public struct LightXError: CodedError, Hashable {
    /// Stable classification.
    public struct Code: ErrorCode {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Fewer bytes than the layout needs.
        public static let truncated = Code(rawValue: "truncated")
        /// A buffer longer than the 256-byte maximum.
        public static let bufferTooLarge = Code(rawValue: "buffer-too-large")
        /// An address above the 24-bit field.
        public static let addressOutOfRange = Code(rawValue: "address-out-of-range")
        /// A value outside the range the protocol allows.
        public static let valueOutOfRange = Code(rawValue: "value-out-of-range")
        /// A reply whose contents do not fit the expected layout.
        public static let malformed = Code(rawValue: "malformed")

        /// The codes this version knows (others may come from newer modules).
        public static let allCases: [Code] = [.truncated, .bufferTooLarge, .addressOutOfRange, .valueOutOfRange, .malformed]
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// Bytes that do not fit the protocol: the device's (or the image's) fault.
    public var category: FailureCategory { .device }

    /// Errors compare by code only.
    public static func == (lhs: LightXError, rhs: LightXError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
