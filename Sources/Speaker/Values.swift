/// Text on the wire: UTF-8, at most 255 bytes, sent as a 1-byte length and the bytes.
public struct WireText: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The longest text in bytes.
    public static let maxBytes = 255
    /// The text.
    public let value: String

    /// Throws `.badText` when `value` is longer than 255 UTF-8 bytes.
    public init(_ value: String) throws(SpeakerError) {
        guard value.utf8.count <= Self.maxBytes else {
            throw SpeakerError(.badText, "text is \(value.utf8.count) UTF-8 bytes, at most \(Self.maxBytes) are allowed")
        }
        self.value = value
    }

    init(unchecked value: String) { self.value = value }

    /// For literals in code: a literal longer than 255 bytes is cut at the last whole character that fits.
    public init(stringLiteral value: String) {
        var s = value
        while s.utf8.count > Self.maxBytes { s.removeLast() }
        self.value = s
    }

    var utf8: String.UTF8View { value.utf8 }
    public var description: String { value }
}

/// A speaker volume: 0 (silent) to 50 (loudest), as the SDK defines it.
public struct SpeakerVolume: Sendable, Hashable, Comparable, CustomStringConvertible {
    public static let range: ClosedRange<UInt8> = 0...50
    public let value: UInt8

    /// Throws `.valueOutOfRange` outside 0...50.
    public init(_ value: Int) throws(SpeakerError) {
        guard value >= 0, value <= Int(Self.range.upperBound) else {
            throw SpeakerError(.valueOutOfRange, "volume \(value) is outside 0...50")
        }
        self.value = UInt8(value)
    }

    public static func < (a: Self, b: Self) -> Bool { a.value < b.value }
    public var description: String { String(value) }
}

/// Stereo balance: -6 (left) to 6 (right), 0 neutral, as the SDK defines it.
public struct SpeakerBalance: Sendable, Hashable, CustomStringConvertible {
    public static let range: ClosedRange<Int8> = -6...6
    public let value: Int8

    /// Throws `.valueOutOfRange` outside -6...6.
    public init(_ value: Int) throws(SpeakerError) {
        guard value >= -6, value <= 6 else { throw SpeakerError(.valueOutOfRange, "balance \(value) is outside -6...6") }
        self.value = Int8(value)
    }

    /// 0, neutral.
    public static let neutral = try! SpeakerBalance(0)
    public var description: String { String(value) }
}

/// A 48-bit MAC address, sent as 6 bytes.
public struct MACAddress: Sendable, Hashable, CustomStringConvertible {
    /// The 6 bytes, most significant first.
    public let bytes: [UInt8]

    /// Throws `.valueOutOfRange` unless `bytes` has 6 elements.
    public init(_ bytes: [UInt8]) throws(SpeakerError) {
        guard bytes.count == 6 else { throw SpeakerError(.valueOutOfRange, "a MAC address has 6 bytes, got \(bytes.count)") }
        self.bytes = bytes
    }

    /// "b0:38:29:1b:36:1f".
    public var description: String { bytes.map(hex).joined(separator: ":") }
}

/// The player states of the SDK, in its order and with its numbering (HKPlayerState).
public enum PlayerState: UInt8, Sendable, Hashable, CaseIterable {
    case initialized = 0
    case playing = 1
    case preparing = 2
    case paused = 3
    case stopped = 4
}

/// Where a stream comes from (for the speaker's status; the audio itself is always PCM on the audio protocol).
public enum StreamSource: UInt8, Sendable, Hashable, CaseIterable {
    /// A local file decoded by the controller.
    case localFile = 0
    /// An HTTP stream decoded by the controller (cannot be resumed after stop).
    case httpStream = 1
}

/// How each PCM sample is stored: interleaved, little-endian, signed.
public enum SampleFormat: UInt8, Sendable, Hashable, CaseIterable {
    /// 16-bit, 2 bytes per sample.
    case s16le = 1
    /// 24-bit packed, 3 bytes per sample.
    case s24le = 2

    /// Bytes per sample.
    public var bytesPerSample: Int { self == .s16le ? 2 : 3 }
    /// Significant bits per sample.
    public var bitsPerSample: Int { bytesPerSample * 8 }
}

/// The PCM format of a stream: sample rate, channels, sample format. Always valid.
public struct AudioFormat: Sendable, Hashable, CustomStringConvertible {
    /// Accepted sample rates in Hz.
    public static let sampleRates: ClosedRange<UInt32> = 8_000...192_000
    /// Accepted channel counts.
    public static let channelCounts: ClosedRange<UInt8> = 1...8

    public let sampleRate: UInt32
    public let channels: UInt8
    public let sampleFormat: SampleFormat

    /// Throws `.valueOutOfRange` for a rate outside 8000...192000 Hz or channels outside 1...8.
    public init(sampleRate: UInt32, channels: UInt8, sampleFormat: SampleFormat) throws(SpeakerError) {
        guard Self.sampleRates.contains(sampleRate) else {
            throw SpeakerError(.valueOutOfRange, "sample rate \(sampleRate) Hz is outside 8000...192000")
        }
        guard Self.channelCounts.contains(channels) else {
            throw SpeakerError(.valueOutOfRange, "channel count \(channels) is outside 1...8")
        }
        self.sampleRate = sampleRate
        self.channels = channels
        self.sampleFormat = sampleFormat
    }

    /// 44.1 kHz stereo s16le.
    public static let cd = try! AudioFormat(sampleRate: 44_100, channels: 2, sampleFormat: .s16le)

    /// Bytes of one frame (one sample per channel).
    public var bytesPerFrame: Int { Int(channels) * sampleFormat.bytesPerSample }

    /// The duration of `frames` frames in nanoseconds, rounded down.
    public func nanoseconds(forFrames frames: UInt64) -> UInt64 {
        // frames × 10⁹ / rate = whole seconds × 10⁹ + the rest's share, in 64 bits (renderers ask for every slot:
        // no 128-bit division); .max when it does not fit.
        let rate = UInt64(sampleRate)
        let (seconds, overflow) = (frames / rate).multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, carry) = seconds.addingReportingOverflow(frames % rate &* 1_000_000_000 / rate)
        return overflow || carry ? .max : sum
    }

    public var description: String { "\(sampleRate) Hz, \(channels) ch, \(sampleFormat)" }

    /// 6 bytes: rate u32, channels u8, format u8 (the audio header and the play request share it).
    func encode(into w: inout ByteWriter) {
        w.u32(sampleRate)
        w.u8(channels)
        w.u8(sampleFormat.rawValue)
    }

    static func decode(from r: inout ByteReader) throws(SpeakerError) -> AudioFormat {
        let rate = try r.u32()
        let channels = try r.u8()
        let raw = try r.u8()
        guard let format = SampleFormat(rawValue: raw) else {
            throw SpeakerError(.valueOutOfRange, "\(r.what): sample format \(hex(raw)) is not defined")
        }
        do {
            return try AudioFormat(sampleRate: rate, channels: channels, sampleFormat: format)
        } catch {
            throw SpeakerError(error.code, "\(r.what): \(error.message)")
        }
    }
}

extension ByteReader {
    /// Reads a byte and maps it to `E`, throwing `.valueOutOfRange` for an undefined value.
    mutating func enumeration<E: RawRepresentable>(_: E.Type, _ field: String) throws(SpeakerError) -> E where E.RawValue == UInt8 {
        let raw = try u8()
        guard let v = E(rawValue: raw) else { throw SpeakerError(.valueOutOfRange, "\(what): \(field) \(hex(raw)) is not defined") }
        return v
    }
}
