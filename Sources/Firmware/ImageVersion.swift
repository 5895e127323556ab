/// An MCUboot image version: `major.minor.revision+build`, as stored in the image header
/// (u8 major, u8 minor, u16 revision, u32 build).
///
/// Contract: `description` is "1.5.0", or "1.5.0+3" when `build` is not 0. Ordering compares major, minor,
/// revision and build, in that order, ignoring nothing. Codable as that string.
public struct ImageVersion: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Incompatible changes.
    public var major: UInt8
    /// Compatible additions.
    public var minor: UInt8
    /// Fixes.
    public var revision: UInt16
    /// Build number (the "+N" suffix).
    public var build: UInt32

    /// A version from its four fields.
    public init(major: UInt8, minor: UInt8, revision: UInt16, build: UInt32 = 0) {
        self.major = major
        self.minor = minor
        self.revision = revision
        self.build = build
    }

    /// The version packed as major << 56 | minor << 48 | revision << 32 | build (ordered as the version is).
    public var packed: UInt64 { UInt64(major) << 56 | UInt64(minor) << 48 | UInt64(revision) << 32 | UInt64(build) }

    /// A version from its packed form (`packed`).
    public init(packed: UInt64) {
        self.init(major: UInt8(truncatingIfNeeded: packed >> 56), minor: UInt8(truncatingIfNeeded: packed >> 48),
                  revision: UInt16(truncatingIfNeeded: packed >> 32), build: UInt32(truncatingIfNeeded: packed))
    }

    /// Parses imgtool's version syntax: `major[.minor[.revision[+build]]]`, decimal without leading zeros, each
    /// part within its field's range ("1.5.0", "1.5.0+3", "2", "1.5"). Returns nil for anything else.
    public init?(parsing text: String) {
        var main = Substring(text)
        var build: UInt32 = 0
        if let plus = text.firstIndex(of: "+") {
            main = text[..<plus]
            guard let b = Self.number(text[text.index(after: plus)...], max: UInt64(UInt32.max)) else { return nil }
            build = UInt32(b)
        }
        let parts = main.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        // imgtool only accepts a build after a full major.minor.revision.
        if text.contains("+") { guard parts.count == 3 else { return nil } }
        guard let major = Self.number(parts[0], max: UInt64(UInt8.max)) else { return nil }
        var minor: UInt64 = 0, revision: UInt64 = 0
        if parts.count > 1 {
            guard let m = Self.number(parts[1], max: UInt64(UInt8.max)) else { return nil }
            minor = m
        }
        if parts.count > 2 {
            guard let r = Self.number(parts[2], max: UInt64(UInt16.max)) else { return nil }
            revision = r
        }
        self.init(major: UInt8(major), minor: UInt8(minor), revision: UInt16(revision), build: build)
    }

    /// A decimal number without sign or leading zeros, at most `max`.
    private static func number(_ text: Substring, max: UInt64) -> UInt64? {
        guard !text.isEmpty, text.count <= 10, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        if text.count > 1 && text.first == "0" { return nil }
        guard let value = UInt64(text), value <= max else { return nil }
        return value
    }

    /// "1.5.0", or "1.5.0+3" when `build` is not 0.
    public var description: String {
        build == 0 ? "\(major).\(minor).\(revision)" : "\(major).\(minor).\(revision)+\(build)"
    }

    /// Lexicographic on major, minor, revision, build.
    public static func < (l: ImageVersion, r: ImageVersion) -> Bool {
        (l.major, l.minor, l.revision, l.build) < (r.major, r.minor, r.revision, r.build)
    }

    /// Decodes the string form ("1.5.0+3").
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let v = ImageVersion(parsing: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not a version like 1.5.0 or 1.5.0+3")
        }
        self = v
    }

    /// Encodes the string form ("1.5.0+3").
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
