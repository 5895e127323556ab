import ArgumentParser
import Foundation
import Headset
import Terminal

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Read everything the headset reports: identity, firmware, battery, ANC, ambient, EQ, settings.",
        discussion: """
            Features the device does not support are shown as 'not supported' and left out of the JSON. Mode says \
            whether the application runs or the device waits in its bootloader (after an interrupted update), and \
            then which application it has committed (JSON: "mode": {"running": "bootloader", \
            "committedApplication": "1.4.2"}).
            """)

    @OptionGroup var device: DeviceOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let address = try device.address()
        let snapshot = try await withHeadset(device) { try await $0.snapshot() }
        try Output.emit(ProbeReport(device: address.description, snapshot: snapshot), json: output.json) {
            ProbeReport.text(address: address.description, snapshot)
        }
    }
}

/// The probe result: the device address plus the snapshot's fields, flat.
struct ProbeReport: Encodable {
    var device: String
    var snapshot: HeadsetSnapshot

    private enum Key: String, CodingKey { case device }

    func encode(to encoder: Encoder) throws {
        try snapshot.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(device, forKey: .device)
    }

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
            rows.append(("ANC", Output.onOff(anc.enabled) + (anc.level.map { String(format: " (level %.2f)", $0) } ?? "")))
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
        var text = ""
        if let g = s.eq.graphic {
            let name = g.presets.first { $0.index == g.currentPreset }?.name ?? "?"
            rows.append(("Graphic EQ", "preset \(g.currentPreset) \"\(name)\", \(g.bandCount) bands, \(Output.signed(g.minGain))...\(Output.signed(g.maxGain)) dB"))
            if let gains = s.eq.gains {
                text = "\n" + GraphicEQPresetReport.gainLines(frequencies: g.frequencies, gains: gains)
            }
        } else {
            rows.append(("Graphic EQ", na))
        }
        let st = s.settings
        var settingsRows: [(String, String)] = [
            ("Smart button", st.smartButtonANC.map { $0 ? "ANC" : "ambient" } ?? na),
            ("Auto-off", st.autoOff.map(Output.onOff) ?? na),
            ("Voice prompt", st.voicePrompt.map(Output.onOff) ?? na),
        ]
        settingsRows = settingsRows.map { ($0.0, $0.1) }
        let all = Output.table(rows + settingsRows)
        // Keep the EQ band lines right after the Graphic EQ row.
        if text.isEmpty { return all }
        var lines = all.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let i = lines.firstIndex(where: { $0.hasPrefix("Graphic EQ") }) { lines.insert(String(text.dropFirst()), at: i + 1) }
        return lines.joined(separator: "\n")
    }
}

struct BatteryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "battery", abstract: "Show the battery level in percent.")

    @OptionGroup var device: DeviceOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let level = try await withHeadset(device) { try await $0.batteryLevel() }
        try Output.emit(["percent": level], json: output.json) { "\(level)%" }
    }
}
