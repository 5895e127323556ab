import ArgumentParser
import Headset
import LightX
import Terminal

struct SettingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Show or change the smart button, auto-off and voice prompt settings.",
        discussion: """
            Names: smart-button (on: the button toggles ANC; off: it cycles ambient), auto-off (on-ear detection \
            with auto-off), voice-prompt. Examples:
              tuneup settings
              tuneup settings set voice-prompt off
            """,
        subcommands: [Get.self, Set.self],
        defaultSubcommand: Get.self)

    enum Name: String, ExpressibleByArgument, CaseIterable {
        case smartButton = "smart-button", autoOff = "auto-off", voicePrompt = "voice-prompt"
        var setting: Setting<Bool> {
            switch self {
            case .smartButton: return AppSettings.smartButton
            case .autoOff: return AppSettings.autoOff
            case .voicePrompt: return AppSettings.voicePrompt
            }
        }
    }

    struct Values: Encodable {
        var smartButtonANC: Bool?
        var autoOff: Bool?
        var voicePrompt: Bool?
    }

    static func show(_ h: Headset) async throws -> Values {
        Values(smartButtonANC: try await h.readIfSupported(AppSettings.smartButton),
               autoOff: try await h.readIfSupported(AppSettings.autoOff),
               voicePrompt: try await h.readIfSupported(AppSettings.voicePrompt))
    }

    static func text(_ v: Values) -> String {
        let na = "not supported"
        return Output.table([("Smart button", v.smartButtonANC.map { $0 ? "ANC" : "ambient" } ?? na),
                             ("Auto-off", v.autoOff.map(Output.onOff) ?? na),
                             ("Voice prompt", v.voicePrompt.map(Output.onOff) ?? na)])
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Show all settings.")
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await present(device, output, text: SettingsCommand.text) { try await SettingsCommand.show($0) }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Change one setting: NAME on|off.")
        @Argument(help: ArgumentHelp("smart-button, auto-off or voice-prompt.", valueName: "name"))
        var name: Name
        @Argument(help: ArgumentHelp("on or off.", valueName: "value"))
        var value: String
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if Switch.parse(value) == nil { throw ValidationError("value must be on or off, got '\(value)'") }
        }

        func run() async throws {
            let on = Switch.parse(value)!
            try await present(device, output, text: SettingsCommand.text) { h in
                try await h.write(name.setting, on)
                return try await SettingsCommand.show(h)
            }
        }
    }
}
