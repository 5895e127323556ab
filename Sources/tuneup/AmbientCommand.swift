import ArgumentParser
import Headset
import LightX
import Terminal

struct AmbientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ambient",
        abstract: "Ambient listening (awareness): show or set the per-side levels and the preset.",
        subcommands: [Get.self, Set.self, Preset.self],
        defaultSubcommand: Get.self)

    struct State: Encodable {
        var left: Int
        var right: Int
        var steps: Int
        var maxStep: Int
        var preset: String?
    }

    static func show(_ h: Headset) async throws -> State {
        let levels = try await h.ambientLevels()
        let preset = try await h.readIfSupported(AppSettings.awarenessPreset)
        return State(left: levels.left, right: levels.right, steps: levels.steps, maxStep: levels.maxStep,
                     preset: preset.map { $0.name?.lowercased() ?? String($0.rawValue) })
    }

    static func text(_ s: State) -> String {
        Output.table([("Left", "\(s.left) of 0...\(s.maxStep)"), ("Right", "\(s.right) of 0...\(s.maxStep)"),
                      ("Preset", s.preset ?? "not supported")])
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Show the left and right levels, the maximum and the preset.")
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: AmbientCommand.text) { try await AmbientCommand.show($0) }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Set the left and/or right ambient level.",
            discussion: "Levels run from 0 to the device's maximum (see 'tuneup ambient get'). Example: tuneup ambient set --left 4 --right 4")
        @Option(parsing: .unconditional, help: ArgumentHelp("Left level.", valueName: "n")) var left: Int?
        @Option(parsing: .unconditional, help: ArgumentHelp("Right level.", valueName: "n")) var right: Int?
        @Option(parsing: .unconditional, help: ArgumentHelp("Set both sides to this level.", valueName: "n")) var both: Int?
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if left == nil && right == nil && both == nil { throw ValidationError("give --left, --right or --both") }
            if both != nil && (left != nil || right != nil) { throw ValidationError("--both cannot be combined with --left or --right") }
            for (name, value) in [("left", left), ("right", right), ("both", both)] {
                if let value, value < 0 { throw ValidationError("--\(name) must be 0 or more, got \(value)") }
            }
        }

        func run() async throws {
            try await present(device, output, text: AmbientCommand.text) { h in
                try await h.setAmbient(left: both ?? left, right: both ?? right)
                return try await AmbientCommand.show(h)
            }
        }
    }

    struct Preset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "preset",
            abstract: "Show or set the awareness preset: none, low, medium or high.",
            discussion: "Example: tuneup ambient preset medium")
        @Argument(help: ArgumentHelp("none, low, medium or high; omit to show.", valueName: "preset"))
        var preset: String?
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let preset, AwarenessPreset.named(preset)?.isKnown != true {
                throw ValidationError("unknown awareness preset '\(preset)'; use none, low, medium or high")
            }
        }

        func run() async throws {
            try await present(device, output, text: AmbientCommand.text) { h in
                if let preset, let value = AwarenessPreset.named(preset) { try await h.setAwarenessPreset(value) }
                return try await AmbientCommand.show(h)
            }
        }
    }
}
