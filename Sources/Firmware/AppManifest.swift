import Foundation
import LightX

/// The manifest the simulated headset's MCU reads at boot from the start of its application payload.
///
/// Contract: stored as `magic` ("TUFW"), a u32 little-endian length, then that many bytes of JSON with sorted
/// keys (`encoded()`). It sits at offset 0 of a raw application image and at `headerSize` of an MCUboot image
/// (`find(in:)`). Decoding validates what the device relies on (`validate()`); a manifest that decodes can be
/// served as is.
public struct AppManifest: Sendable, Hashable, Codable {
    /// One graphic-EQ preset: its device-given name and factory gains (one per band, in dB).
    public struct Preset: Sendable, Hashable, Codable {
        /// The preset's name as the device reports it.
        public var name: String
        /// The factory gains, one per band, within `minGain...maxGain`.
        public var gains: [Int32]

        /// A preset from its name and gains.
        public init(name: String, gains: [Int32]) {
            self.name = name
            self.gains = gains
        }
    }

    /// "1.5.0" — what AppFirmwareVersion/ConfigFirmwareVersion report (major.minor.revision, each 0...255).
    public var version: String
    /// "TS-1" — ConfigModelNumber; the updater refuses images for another model.
    public var model: String
    /// ConfigProductName override; nil keeps the device's own.
    public var product: String?
    /// Graphic-EQ band centre frequencies in Hz; their count is the band count (1...62).
    public var bandFrequencies: [UInt32]
    /// The smallest band gain in dB.
    public var minGain: Int32
    /// The largest band gain in dB.
    public var maxGain: Int32
    /// The graphic-EQ presets with their factory gains (1...255 presets).
    public var presets: [Preset]
    /// The number of ambient levels (1...255; 8 means steps 0...7).
    public var ambientSteps: Int

    /// A manifest from its fields (not validated; see `validate()`).
    public init(version: String, model: String, product: String? = nil, bandFrequencies: [UInt32], minGain: Int32,
                maxGain: Int32, presets: [Preset], ambientSteps: Int) {
        self.version = version
        self.model = model
        self.product = product
        self.bandFrequencies = bandFrequencies
        self.minGain = minGain
        self.maxGain = maxGain
        self.presets = presets
        self.ambientSteps = ambientSteps
    }

    /// The 4 bytes that start an encoded manifest: "TUFW".
    public static let magic: [UInt8] = Array("TUFW".utf8)
    /// The largest JSON body `init(decoding:)` accepts.
    public static let maxJSONLength = 64 * 1024
    /// The most bands a LightX preset-gains buffer carries.
    public static let maxBands = GraphicEQPresetGains.maxBands

    /// `magic`, u32 little-endian JSON length, JSON with sorted keys (no whitespace, slashes unescaped).
    public func encoded() -> [UInt8] {
        let json = (try? Self.encoder.encode(self)).map { Array($0) } ?? Array("{}".utf8)
        var out = Self.magic
        LE.append(UInt32(json.count), to: &out)
        return out + json
    }

    /// The JSON body alone, pretty-printed with sorted keys (for files people edit, e.g. `--manifest`).
    public func prettyJSON() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) + "\n" } ?? "{}\n"
    }

    /// Decodes `magic` + length + JSON from the start of `bytes` (trailing bytes are ignored) and validates it.
    /// Throws `.badManifest` (or `.truncated` when the bytes end inside it).
    public init(decoding bytes: ArraySlice<UInt8>) throws(ImageError) {
        let b = Array(bytes.prefix(8))
        guard b.count >= 4, Array(b[0..<4]) == Self.magic else {
            throw ImageError(.badManifest, "no application manifest (expected the 'TUFW' magic)")
        }
        guard let length = LE.u32(b, 4) else { throw ImageError(.truncated, "application manifest header is cut off") }
        guard length <= UInt32(Self.maxJSONLength) else {
            throw ImageError(.badManifest, "application manifest claims \(length) bytes of JSON, more than \(Self.maxJSONLength)")
        }
        let start = bytes.startIndex + 8
        guard bytes.count - 8 >= Int(length) else {
            throw ImageError(.truncated, "application manifest claims \(length) bytes of JSON, only \(bytes.count - 8) follow")
        }
        let json = Data(bytes[start..<(start + Int(length))])
        do {
            self = try JSONDecoder().decode(AppManifest.self, from: json)
        } catch {
            throw ImageError(.badManifest, "application manifest JSON is invalid: \(Self.describe(error))")
        }
        try validate()
    }

    /// Decodes a manifest from its pretty or compact JSON alone (no magic), and validates it.
    public init(json: [UInt8]) throws(ImageError) {
        do {
            self = try JSONDecoder().decode(AppManifest.self, from: Data(json))
        } catch {
            throw ImageError(.badManifest, "manifest JSON is invalid: \(Self.describe(error))")
        }
        try validate()
    }

    /// Checks what the simulated device relies on: version "major.minor.revision" (each 0...255), a model of 1...64
    /// UTF-8 bytes, a product (when given) of 1...64 bytes, 1...62 bands with frequencies above 0,
    /// `minGain <= maxGain`, 1...255 presets with a name of 1...64 bytes and one gain per band within the range, and
    /// 1...255 ambient steps. Throws `.badManifest` naming the first problem.
    public func validate() throws(ImageError) {
        func bad(_ why: String) -> ImageError { ImageError(.badManifest, "application manifest: \(why)") }
        guard FirmwareVersion(version) != nil else { throw bad("version '\(version)' is not major.minor.revision (each 0...255)") }
        guard (1...64).contains(model.utf8.count) else { throw bad("model must be 1...64 bytes, got \(model.utf8.count)") }
        if let product, !(1...64).contains(product.utf8.count) {
            throw bad("product must be 1...64 bytes, got \(product.utf8.count)")
        }
        guard (1...Self.maxBands).contains(bandFrequencies.count) else {
            throw bad("\(bandFrequencies.count) bands (expected 1...\(Self.maxBands))")
        }
        guard !bandFrequencies.contains(0) else { throw bad("band frequency 0 Hz") }
        guard minGain <= maxGain else { throw bad("minGain \(minGain) is above maxGain \(maxGain)") }
        guard (1...255).contains(presets.count) else { throw bad("\(presets.count) presets (expected 1...255)") }
        for (k, p) in presets.enumerated() {
            guard (1...64).contains(p.name.utf8.count) else { throw bad("preset \(k) name must be 1...64 bytes") }
            guard p.gains.count == bandFrequencies.count else {
                throw bad("preset \(k) '\(p.name)' has \(p.gains.count) gains for \(bandFrequencies.count) bands")
            }
            if let g = p.gains.first(where: { $0 < minGain || $0 > maxGain }) {
                throw bad("preset \(k) '\(p.name)' gain \(g) is outside \(minGain)...\(maxGain)")
            }
        }
        guard (1...255).contains(ambientSteps) else { throw bad("ambientSteps \(ambientSteps) (expected 1...255)") }
    }

    /// The version as the device reports it (0x87), nil when it does not parse.
    public var firmwareVersion: FirmwareVersion? { FirmwareVersion(version) }
    /// The version as an image version, nil when it does not parse.
    public var imageVersion: ImageVersion? { ImageVersion(parsing: version) }

    /// The manifest of an application image: at offset 0 of a raw image, at `headerSize` of an MCUboot image.
    /// Returns nil when there is none or it does not decode.
    public static func find(in imageBytes: [UInt8]) -> AppManifest? {
        if MCUbootImage.hasMagic(imageBytes) {
            if let image = try? MCUbootImage(parsing: imageBytes) {
                return try? AppManifest(decoding: image.payload)
            }
            guard let headerSize = LE.u16(imageBytes, 8), Int(headerSize) <= imageBytes.count else { return nil }
            return try? AppManifest(decoding: imageBytes[Int(headerSize)...])
        }
        return try? AppManifest(decoding: imageBytes[...])
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()

    /// A one-line description of a decoding error.
    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "missing field '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let c), DecodingError.valueNotFound(_, let c):
            return "wrong type at '\(c.codingPath.map(\.stringValue).joined(separator: "."))'"
        case DecodingError.dataCorrupted(let c):
            let path = c.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "not valid JSON" : "bad value at '\(path)'"
        default: return "not valid JSON"
        }
    }
}
