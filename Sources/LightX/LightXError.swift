/// An error from encoding or decoding LightX values, with a stable code and a one-line message.
public struct LightXError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable classification.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// Fewer bytes than the layout needs.
        case truncated
        /// A buffer longer than the 256-byte maximum.
        case bufferTooLarge = "buffer-too-large"
        /// An address above the 24-bit field.
        case addressOutOfRange = "address-out-of-range"
        /// A value outside the range the protocol allows.
        case valueOutOfRange = "value-out-of-range"
        /// A reply whose contents do not fit the expected layout.
        case malformed
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// Errors compare by code only.
    public static func == (lhs: LightXError, rhs: LightXError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
