import ArgumentParser
import Headset
import LightX
import Terminal

struct ANCCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "anc",
        abstract: "Active noise cancelling: show, switch on or off, set the level.",
        subcommands: [Get.self, On.self, Off.self, Level.self],
        defaultSubcommand: Get.self)

    struct State: Encodable {
        var enabled: Bool
        var level: Float?
    }

    static func show(_ headset: Headset) async throws -> State {
        State(enabled: try await headset.isANCEnabled(), level: try await headset.readIfSupported(AppSettings.ancLevel))
    }

    static func text(_ s: State) -> String {
        "ANC " + Output.onOff(s.enabled) + (s.level.map { " (level \(String(format: "%.2f", $0)))" } ?? "")
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Show whether ANC is on, and its level.")
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: ANCCommand.text) { try await ANCCommand.show($0) }
        }
    }

    struct On: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "on", abstract: "Switch ANC on.")
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: ANCCommand.text) { h in
                try await h.setANC(true)
                return try await ANCCommand.show(h)
            }
        }
    }

    struct Off: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "off", abstract: "Switch ANC off.")
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: ANCCommand.text) { h in
                try await h.setANC(false)
                return try await ANCCommand.show(h)
            }
        }
    }

    struct Level: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "level",
            abstract: "Show or set the ANC level (0.0 to 1.0).",
            discussion: "Example: tuneup anc level 0.75")
        @Argument(help: ArgumentHelp("New level, 0.0 to 1.0; omit to show the current level.", valueName: "level"))
        var level: Float?
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if let level, !(level.isFinite && (0...1).contains(level)) {
                throw ValidationError("the ANC level must be between 0.0 and 1.0, got \(level)")
            }
        }

        func run() async throws {
            try await present(device, output, text: ANCCommand.text) { h in
                if let level { try await h.setANCLevel(level) }
                return try await ANCCommand.show(h)
            }
        }
    }
}
