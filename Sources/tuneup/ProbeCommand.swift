import ArgumentParser
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
        let report = ProbeReport(device: address.description, snapshot: snapshot)
        try Output.emit(report, json: output.json) { report.text }
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
