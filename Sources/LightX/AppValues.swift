/// ANC awareness ("ambient") preset, command 0x86 (sheet §4.2, §2.6).
public struct AwarenessPreset: LightXCode {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let none = AwarenessPreset(rawValue: 0)
    public static let low = AwarenessPreset(rawValue: 1)
    public static let medium = AwarenessPreset(rawValue: 2)
    public static let high = AwarenessPreset(rawValue: 3)
    public static let knownNames: [UInt32: String] = [0: "None", 1: "Low", 2: "Medium", 3: "High"]
}

/// Audio EQ preset, command 0x81 (sheet §4.10).
public struct AudioEQPreset: LightXCode {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let music = AudioEQPreset(rawValue: 0)
    public static let gaming = AudioEQPreset(rawValue: 1)
    public static let movie = AudioEQPreset(rawValue: 2)
    public static let conference = AudioEQPreset(rawValue: 3)
    public static let knownNames: [UInt32: String] = [0: "Music", 1: "Gaming", 2: "Movie", 3: "Conference"]
}

/// Application firmware version as the device reports it for 0x87: byte 0 major, 1 minor, 2 revision (§4.11).
/// Byte 3 has no documented meaning; it is kept as `extra` so the reply re-encodes unchanged.
public struct FirmwareVersion: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    public var major: UInt8
    public var minor: UInt8
    public var revision: UInt8
    public var extra: UInt8

    public init(_ major: UInt8, _ minor: UInt8, _ revision: UInt8, extra: UInt8 = 0) {
        self.major = major
        self.minor = minor
        self.revision = revision
        self.extra = extra
    }

    /// Parses "major.minor.revision" (the version-file form, §4.15); each part 0...255.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let a = UInt8(parts[0]), let b = UInt8(parts[1]), let c = UInt8(parts[2]) else { return nil }
        self.init(a, b, c)
    }

    /// "major.minor.revision".
    public var description: String { "\(major).\(minor).\(revision)" }

    public static func < (l: FirmwareVersion, r: FirmwareVersion) -> Bool {
        (l.major, l.minor, l.revision) < (r.major, r.minor, r.revision)
    }

    /// The 4-byte reply layout.
    public static let codec = ValueCodec<FirmwareVersion>(
        encode: { [$0.major, $0.minor, $0.revision, $0.extra] },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            guard b.count >= 3 else {
                throw LightXError(.truncated, "firmware version reply needs at least 3 bytes, got \(b.count)")
            }
            let s = b.startIndex
            return FirmwareVersion(b[s], b[s + 1], b[s + 2], extra: b.count > 3 ? b[s + 3] : 0)
        })
}

/// Graphic EQ limits, command 0x90 (§4.5): 16 bytes u32 bands, u32 settings, i32 min dB, i32 max dB.
///
/// `settingCount` is the sheet's numSettings; this project reads it as the number of presets, as the AV35xx
/// catalogue names it (the sheet notes it could instead mean gain steps).
public struct GraphicEQLimits: Sendable, Hashable, Codable {
    public var bandCount: UInt32
    public var settingCount: UInt32
    public var minGain: Int32
    public var maxGain: Int32

    public init(bandCount: UInt32, settingCount: UInt32, minGain: Int32, maxGain: Int32) {
        self.bandCount = bandCount
        self.settingCount = settingCount
        self.minGain = minGain
        self.maxGain = maxGain
    }

    public static let codec = ValueCodec<GraphicEQLimits>(
        encode: { v in
            var w = ArgumentWriter()
            w.u32(v.bandCount); w.u32(v.settingCount); w.i32(v.minGain); w.i32(v.maxGain)
            return w.bytes
        },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            var r = ArgumentReader(b, context: "graphic EQ limits reply")
            return GraphicEQLimits(bandCount: try r.u32("band count"), settingCount: try r.u32("setting count"),
                                   minGain: try r.i32("minimum gain"), maxGain: try r.i32("maximum gain"))
        })
}

/// The band gains of one graphic-EQ preset, command 0x94 (§4.7): u32 preset, u32 band count, count × i32 gain.
/// The read request uses the same layout with zero gains.
public struct GraphicEQPresetGains: Sendable, Hashable, Codable {
    public var preset: UInt32
    public var gains: [Int32]

    public init(preset: UInt32, gains: [Int32]) {
        self.preset = preset
        self.gains = gains
    }

    /// The most bands a 256-byte buffer can carry in this layout.
    public static let maxBands = (Packet.maxBufferSize - 8) / 4

    public static let codec = ValueCodec<GraphicEQPresetGains>(
        encode: { v in
            var w = ArgumentWriter()
            w.u32(v.preset); w.u32(UInt32(v.gains.count))
            for g in v.gains.prefix(maxBands) { w.i32(g) }
            return w.bytes
        },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            var r = ArgumentReader(b, context: "graphic EQ preset bands")
            let preset = try r.u32("preset")
            let count = try r.u32("band count")
            guard count <= maxBands else {
                throw LightXError(.malformed, "graphic EQ preset bands: band count \(count) does not fit a LightX buffer")
            }
            var gains: [Int32] = []
            for k in 0..<Int(count) { gains.append(try r.i32("gain of band \(k)")) }
            return GraphicEQPresetGains(preset: preset, gains: gains)
        })
}

/// One graphic-EQ band of one preset, command 0x95 (§4.8): u32 preset, u32 band, i32 gain (0 in read requests).
public struct GraphicEQBandGain: Sendable, Hashable, Codable {
    public var preset: UInt32
    public var band: UInt32
    public var gain: Int32

    public init(preset: UInt32, band: UInt32, gain: Int32) {
        self.preset = preset
        self.band = band
        self.gain = gain
    }

    public static let codec = ValueCodec<GraphicEQBandGain>(
        encode: { v in
            var w = ArgumentWriter()
            w.u32(v.preset); w.u32(v.band); w.i32(v.gain)
            return w.bytes
        },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            var r = ArgumentReader(b, context: "graphic EQ band")
            return GraphicEQBandGain(preset: try r.u32("preset"), band: try r.u32("band"), gain: try r.i32("gain"))
        })
}

/// Graphic-EQ band centre frequencies in Hz, command 0x97 (§4.9): u32 band count, count × u32.
/// The read request uses the same layout with zero frequencies.
public enum GraphicEQBandFrequencies {
    public static let codec = ValueCodec<[UInt32]>(
        encode: { v in
            var w = ArgumentWriter()
            w.u32(UInt32(v.count))
            for f in v.prefix(GraphicEQPresetGains.maxBands) { w.u32(f) }
            return w.bytes
        },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            var r = ArgumentReader(b, context: "graphic EQ band frequencies")
            let count = try r.u32("band count")
            guard count <= GraphicEQPresetGains.maxBands else {
                throw LightXError(.malformed, "graphic EQ band frequencies: band count \(count) does not fit a LightX buffer")
            }
            var out: [UInt32] = []
            for k in 0..<Int(count) { out.append(try r.u32("frequency of band \(k)")) }
            return out
        })
}
