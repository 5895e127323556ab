import Support

/// What `tuneup probe` reports: the device's address and everything its snapshot holds, flat in the JSON, and a table
/// for people (features the device does not support say so; the graphic EQ's band lines follow its row).
public struct ProbeReport: Encodable, Sendable {
    public var device: String
    public var snapshot: HeadsetSnapshot

    public init(device: String, snapshot: HeadsetSnapshot) {
        self.device = device
        self.snapshot = snapshot
    }

    private enum Key: String, CodingKey { case device }

    public func encode(to encoder: Encoder) throws {
        try snapshot.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(device, forKey: .device)
    }

    public var text: String { Self.text(address: device, snapshot) }

    static func onOff(_ value: Bool) -> String { value ? "on" : "off" }

    static func text(address: String, _ s: HeadsetSnapshot) -> String {
        let na = "not supported"
        var rows: [(String, String)] = [("Device", address)]
        let inBootloader = s.mode?.running == .bootloader
        if let mode = s.mode {
            rows.append(("Mode", inBootloader
                ? "bootloader (" + (mode.committedApplication.map { "committed application \($0)" } ?? "no committed application")
                    + "): 'tuneup flash IMAGE' installs one" + (mode.committedApplication != nil ? ", 'tuneup bootloader leave' starts it" : "")
                : "application"))
        }
        let id = s.identity
        let firmware = inBootloader ? "bootloader running" : s.firmwareVersion ?? id.firmware ?? na
        rows += [("Product", id.product ?? na), ("Manufacturer", id.manufacturer ?? na), ("Model", id.model ?? na),
                 ("Serial", id.serial ?? na), ("Hardware", id.hardware ?? na), ("Firmware", firmware),
                 ("BT name", id.bluetoothName ?? na), ("Battery", s.batteryPercent.map { "\($0)%" } ?? na)]
        if let anc = s.anc {
            rows.append(("ANC", onOff(anc.enabled) + (anc.level.map { " (level \(TextFormat.fixed(Double($0), decimals: 2)))" } ?? "")))
        } else {
            rows.append(("ANC", na))
        }
        if let a = s.ambient {
            var parts: [String] = []
            if let preset = a.preset ?? a.presetValue.map({ "\($0)" }) { parts.append("preset \(preset)") }
            if let left = a.left, let right = a.right, let steps = a.steps {
                parts.append("left \(left)/\(steps - 1), right \(right)/\(steps - 1)")
            }
            rows.append(("Ambient", parts.joined(separator: ", ")))
        } else {
            rows.append(("Ambient", na))
        }
        rows.append(("Audio EQ", s.eq.audioPreset ?? na))
        var bands = ""
        if let g = s.eq.graphic {
            let name = g.presets.first { $0.index == g.currentPreset }?.name ?? "?"
            rows.append(("Graphic EQ", "preset \(g.currentPreset) \"\(name)\", \(g.bandCount) bands, \(TextFormat.signed(g.minGain))...\(TextFormat.signed(g.maxGain)) dB"))
            if let gains = s.eq.gains {
                bands = GraphicEQPresetReport.gainLines(frequencies: g.frequencies, gains: gains)
            }
        } else {
            rows.append(("Graphic EQ", na))
        }
        let st = s.settings
        rows += [
            ("Smart button", st.smartButtonANC.map { $0 ? "ANC" : "ambient" } ?? na),
            ("Auto-off", st.autoOff.map(onOff) ?? na),
            ("Voice prompt", st.voicePrompt.map(onOff) ?? na),
        ]
        let all = TextTable.aligned(rows)
        // The EQ band lines right after the Graphic EQ row.
        if bands.isEmpty { return all }
        var lines = all.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let i = lines.firstIndex(where: { $0.hasPrefix("Graphic EQ") }) { lines.insert(bands, at: i + 1) }
        return lines.joined(separator: "\n")
    }
}
