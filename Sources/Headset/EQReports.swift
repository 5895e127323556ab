import Support

// What `tuneup eq` reports, with its text for people: a program using the library prints what tuneup prints without
// writing it again.

/// A graphic-EQ preset's band gains (`eq get`, `set`, `preset`, `persist`, `default`, `reset`).
public struct GraphicEQPresetReport: Encodable, Sendable, Hashable {
    public var preset: Int
    public var name: String
    public var current: Bool
    public var frequencies: [Int]
    public var gains: [Int]

    public init(preset: Int, name: String, current: Bool, frequencies: [Int], gains: [Int]) {
        (self.preset, self.name, self.current, self.frequencies, self.gains) = (preset, name, current, frequencies, gains)
    }

    /// `Preset 1 "Music" (current)`, then a line per band: its frequency and gain.
    public var text: String {
        "Preset \(preset) \"\(name)\"" + (current ? " (current)" : "") + "\n" + Self.gainLines(frequencies: frequencies, gains: gains)
    }

    /// A line per band: `  1 kHz    +3 dB`.
    public static func gainLines(frequencies: [Int], gains: [Int]) -> String {
        zip(frequencies, gains).map { f, g in
            let frequency = String(TextFormat.frequency(f).prefix(8)), gain = TextFormat.signed(g)
            return "  " + frequency + String(repeating: " ", count: max(0, 8 - frequency.count))
                + String(repeating: " ", count: max(0, 3 - gain.count)) + gain + " dB"
        }.joined(separator: "\n")
    }
}

extension GraphicEQInfo {
    /// The preset named `text` (its device name, any case, or its number); nil: the current one.
    /// - Throws: `HeadsetError(.invalidArgument)` (a usage error) naming the device's presets.
    public func preset(_ text: String?) throws(HeadsetError) -> Int {
        guard let text else { return currentPreset }
        guard let index = presetIndex(text) else {
            let names = presets.map { "\($0.index) \($0.name.lowercased())" }.joined(separator: ", ")
            throw HeadsetError(.invalidArgument, "unknown preset '\(text)'; this device has: \(names)")
        }
        return index
    }

    /// Bands, gain range, frequencies and presets, aligned.
    public var text: String {
        var rows: [(String, String)] = [
            ("Bands", "\(bandCount)"),
            ("Gain range", "\(TextFormat.signed(minGain))...\(TextFormat.signed(maxGain)) dB"),
            ("Frequencies", frequencies.map(TextFormat.frequency).joined(separator: ", ")),
        ]
        for p in presets {
            rows.append((p.index == presets.first?.index ? "Presets" : "", "\(p.index) \(p.name)" + (p.index == currentPreset ? " (current)" : "")))
        }
        return TextTable.aligned(rows)
    }
}

extension Headset {
    /// The gains of the preset named `text` (nil: the current one).
    public func graphicEQPresetGains(preset text: String?) async throws -> GraphicEQPresetReport {
        let info = try await graphicEQInfo()
        let preset = try info.preset(text)
        let gains = try await graphicEQGains(preset: preset)
        let name = info.presets.first { $0.index == preset }?.name ?? "Preset \(preset)"
        return GraphicEQPresetReport(preset: preset, name: name, current: preset == info.currentPreset, frequencies: info.frequencies, gains: gains)
    }
}
