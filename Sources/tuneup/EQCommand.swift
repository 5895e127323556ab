import ArgumentParser
import Headset
import Foundation
import LightX
import Terminal

struct EQCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eq",
        abstract: "Graphic equalizer and audio EQ preset.",
        discussion: """
            Presets can be named by their device name (e.g. music, user) or by number. Examples:
              tuneup eq info
              tuneup eq get --preset user
              tuneup eq set --preset user -- 3 2 1 0 0 0 1 2 3 4
              tuneup eq set --band 0 --gain -4
              tuneup eq preset movie
              tuneup eq persist
              tuneup eq audio gaming
            """,
        subcommands: [Info.self, Get.self, Set.self, Preset.self, Persist.self, Default.self, Reset.self, Audio.self],
        defaultSubcommand: Get.self)

    /// "  31 Hz  +2" lines, one per band.
    static func gainLines(frequencies: [Int], gains: [Int]) -> String {
        zip(frequencies, gains).map { f, g in
            "  " + Output.frequency(f).padding(toLength: 8, withPad: " ", startingAt: 0) + Output.signed(g).leftPadded(to: 3) + " dB"
        }.joined(separator: "\n")
    }

    /// Resolves a preset given by name or number against the device's presets (current preset when nil).
    static func resolve(_ text: String?, _ info: GraphicEQInfo) throws -> Int {
        guard let text else { return info.currentPreset }
        guard let index = info.presetIndex(text) else {
            let names = info.presets.map { "\($0.index) \($0.name.lowercased())" }.joined(separator: ", ")
            throw CommandFailure(message: "unknown preset '\(text)'; this device has: \(names)", code: Exit.usage)
        }
        return index
    }

    struct PresetGains: Encodable {
        var preset: Int
        var name: String
        var current: Bool
        var frequencies: [Int]
        var gains: [Int]
    }

    static func gains(_ h: Headset, preset text: String?) async throws -> PresetGains {
        let info = try await h.graphicEQInfo()
        let preset = try resolve(text, info)
        let gains = try await h.graphicEQGains(preset: preset)
        let name = info.presets.first { $0.index == preset }?.name ?? "Preset \(preset)"
        return PresetGains(preset: preset, name: name, current: preset == info.currentPreset, frequencies: info.frequencies, gains: gains)
    }

    static func text(_ g: PresetGains) -> String {
        "Preset \(g.preset) \"\(g.name)\"" + (g.current ? " (current)" : "") + "\n" + gainLines(frequencies: g.frequencies, gains: g.gains)
    }

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "info", abstract: "Show bands, gain range, band frequencies and presets.")
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            let info = try await withHeadset(device) { try await $0.graphicEQInfo() }
            try Output.emit(info, json: output.json) {
                var rows: [(String, String)] = [
                    ("Bands", "\(info.bandCount)"),
                    ("Gain range", "\(Output.signed(info.minGain))...\(Output.signed(info.maxGain)) dB"),
                    ("Frequencies", info.frequencies.map(Output.frequency).joined(separator: ", ")),
                ]
                for p in info.presets {
                    rows.append((p.index == info.presets.first?.index ? "Presets" : "", "\(p.index) \(p.name)" + (p.index == info.currentPreset ? " (current)" : "")))
                }
                return Output.table(rows)
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Show the band gains of the current preset (or --preset).")
        @Option(help: ArgumentHelp("Preset name or number; default: the current preset.", valueName: "preset"))
        var preset: String?
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: EQCommand.text) { try await EQCommand.gains($0, preset: preset) }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Set all band gains of a preset, or one band.",
            discussion: """
                Give one gain per band (dB, within the device's range; see 'tuneup eq info'), after '--' so that \
                negative values are not read as options, or as --gains with commas. Or give --band and --gain.
                  tuneup eq set --preset user -- 3 2 1 0 0 0 1 2 3 4
                  tuneup eq set --gains=-2,-1,0,0,0,0,0,0,1,2
                  tuneup eq set --band 9 --gain=-3
                """)
        @Option(help: ArgumentHelp("Preset name or number; default: the current preset.", valueName: "preset"))
        var preset: String?
        @Option(parsing: .unconditional, help: ArgumentHelp("Band index (0 = lowest frequency) to set alone, with --gain.", valueName: "band"))
        var band: Int?
        @Option(parsing: .unconditional, help: ArgumentHelp("Gain in dB for --band.", valueName: "db"))
        var gain: Int?
        @Option(parsing: .unconditional, help: ArgumentHelp("All gains, comma-separated.", valueName: "g1,g2,..."))
        var gains: String?
        @Argument(help: ArgumentHelp("All gains in dB, one per band.", valueName: "gain"))
        var values: [Int] = []
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func allGains() throws -> [Int]? {
            if let gains {
                let parts = gains.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                let numbers = parts.compactMap { Int($0) }
                guard numbers.count == parts.count, !numbers.isEmpty else {
                    throw ValidationError("--gains takes whole numbers separated by commas, e.g. --gains=-2,0,0,1")
                }
                return numbers
            }
            return values.isEmpty ? nil : values
        }

        func validate() throws {
            let list = try allGains()
            if gains != nil && !values.isEmpty { throw ValidationError("give the gains either as arguments or with --gains, not both") }
            switch (band, gain, list) {
            case (.some, .some, nil): break
            case (nil, nil, .some): break
            case (.some, nil, _), (nil, .some, _): throw ValidationError("--band and --gain go together")
            case (nil, nil, nil): throw ValidationError("give one gain per band, or --band and --gain")
            default: throw ValidationError("give either one gain per band or --band and --gain, not both")
            }
            if let band, band < 0 { throw ValidationError("--band must be 0 or more") }
        }

        func run() async throws {
            let list = try allGains()
            try await present(device, output, text: EQCommand.text) { h in
                let info = try await h.graphicEQInfo()
                let target = try EQCommand.resolve(preset, info)
                if let band, let gain {
                    try await h.setGraphicEQBand(preset: target, band: band, gain: gain)
                } else if let list {
                    try await h.setGraphicEQGains(preset: target, gains: list)
                }
                return try await EQCommand.gains(h, preset: String(target))
            }
        }
    }

    struct Preset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "preset",
            abstract: "Show or select the current graphic-EQ preset.",
            discussion: "Example: tuneup eq preset movie")
        @Argument(help: ArgumentHelp("Preset name or number to select; omit to show the current one.", valueName: "preset"))
        var preset: String?
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: EQCommand.text) { h in
                if let preset {
                    try await h.selectGraphicEQPreset(try EQCommand.resolve(preset, try await h.graphicEQInfo()))
                }
                return try await EQCommand.gains(h, preset: nil)
            }
        }
    }

    struct Persist: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "persist",
            abstract: "Store a preset's current gains in the device's non-volatile memory.",
            discussion: "Without persisting, gain changes last until the headset is switched off.")
        @Option(help: ArgumentHelp("Preset name or number; default: the current preset.", valueName: "preset"))
        var preset: String?
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: { "Persisted " + EQCommand.text($0) }) { h in
                let target = try EQCommand.resolve(preset, try await h.graphicEQInfo())
                try await h.persistGraphicEQPreset(target)
                return try await EQCommand.gains(h, preset: String(target))
            }
        }
    }

    struct Default: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "default", abstract: "Make a preset the one the headset starts with.")
        @Argument(help: ArgumentHelp("Preset name or number.", valueName: "preset"))
        var preset: String
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: { "Default preset: " + EQCommand.text($0) }) { h in
                let target = try EQCommand.resolve(preset, try await h.graphicEQInfo())
                try await h.setDefaultGraphicEQPreset(target)
                return try await EQCommand.gains(h, preset: String(target))
            }
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Restore factory gains of one preset, or of all presets.",
            discussion: "Examples: tuneup eq reset --preset user;  tuneup eq reset --all")
        @Option(help: ArgumentHelp("Preset name or number to reset.", valueName: "preset"))
        var preset: String?
        @Flag(help: "Reset every preset (and the default preset).")
        var all = false
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if (preset == nil) == !all { throw ValidationError("give either --preset P or --all") }
        }

        func run() async throws {
            try await present(device, output, text: { "Reset. " + EQCommand.text($0) }) { h in
                if let preset {
                    let target = try EQCommand.resolve(preset, try await h.graphicEQInfo())
                    try await h.factoryResetGraphicEQ(preset: target)
                    return try await EQCommand.gains(h, preset: String(target))
                }
                try await h.factoryResetGraphicEQ(preset: nil)
                return try await EQCommand.gains(h, preset: nil)
            }
        }
    }

    struct Audio: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "audio",
            abstract: "Show or set the audio EQ preset: music, gaming, movie or conference.")
        @Argument(help: ArgumentHelp("music, gaming, movie or conference; omit to show.", valueName: "preset"))
        var preset: String?
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let preset, AudioEQPreset.named(preset)?.isKnown != true {
                throw ValidationError("unknown audio EQ preset '\(preset)'; use music, gaming, movie or conference")
            }
        }

        func run() async throws {
            let value = try await withHeadset(device) { h in
                if let preset, let p = AudioEQPreset.named(preset) { try await h.setAudioEQPreset(p) }
                return try await h.audioEQPreset()
            }
            let name = value.name?.lowercased() ?? String(value.rawValue)
            try Output.emit(["audioPreset": name], json: output.json) { "Audio EQ preset: \(name)" }
        }
    }
}

extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
