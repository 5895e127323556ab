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

    static func text(_ g: GraphicEQPresetReport) -> String { g.text }

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "info", abstract: "Show bands, gain range, band frequencies and presets.")
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            let info = try await withHeadset(device) { try await $0.graphicEQInfo() }
            try Output.emit(info, json: output.json) { info.text }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Show the band gains of the current preset (or --preset).")
        @Option(help: ArgumentHelp("Preset name or number; default: the current preset.", valueName: "preset"))
        var preset: String?
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: EQCommand.text) { try await $0.graphicEQPresetGains(preset: preset) }
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
                if let band, let gain { return try await h.setGraphicEQ(preset: preset, band: band, gain: gain) }
                return try await h.setGraphicEQ(preset: preset, gains: list ?? [])
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
            try await present(device, output, text: EQCommand.text) { try await $0.selectGraphicEQPreset(named: preset) }
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
            try await present(device, output, text: { "Persisted " + EQCommand.text($0) }) { try await $0.persistGraphicEQPreset(named: preset) }
        }
    }

    struct Default: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "default", abstract: "Make a preset the one the headset starts with.")
        @Argument(help: ArgumentHelp("Preset name or number.", valueName: "preset"))
        var preset: String
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: { "Default preset: " + EQCommand.text($0) }) { try await $0.setDefaultGraphicEQPreset(named: preset) }
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
            try await present(device, output, text: { "Reset. " + EQCommand.text($0) }) { try await $0.factoryResetGraphicEQ(named: preset) }
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
            let name = try await withHeadset(device) { try await $0.audioEQPresetName(setting: preset.flatMap(AudioEQPreset.named)) }
            try Output.emit(["audioPreset": name], json: output.json) { "Audio EQ preset: \(name)" }
        }
    }
}
