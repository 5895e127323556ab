import ArgumentParser
import LightX
import Terminal
import TuneupKit

/// `tuneup factory measure` and `tuneup factory verify`: what a station checks before and after it locks a unit.
extension FactoryCommand {
    struct Measure: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "measure",
            abstract: "Take factory measurements: battery level, microphone sensitivities, ANC attenuation.",
            discussion: """
                NAME is one of \(FactoryMeasurement.allCases.map(\.name).joined(separator: ", ")) (the tests of a \
                provisioning recipe); none measures all four, in that order. Each is taken in the mode the unit runs \
                (no mode switch, no authentication) and is a new reading: a retry can differ by the unit's noise. A \
                locked unit measures too (measuring changes nothing).
                Examples:
                  tuneup factory measure -d tcp:127.0.0.1:4100   # all four
                  tuneup factory measure anc-attenuation --format json -d tcp:127.0.0.1:4100
                """)
        @Argument(help: ArgumentHelp("Measurements to take (default: all).", valueName: "name"))
        var names: [String] = []
        @OptionGroup var wait: BootloaderCommand.WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws { _ = try measurements() }

        func measurements() throws -> [FactoryMeasurement] {
            do { return try FactoryReadings.measurements(named: names) } catch { throw ValidationError(error.message) }
        }

        func run() async throws {
            let list = try measurements()
            try await FactoryCommand.run(device, wait, output, text: \FactoryReadings.text) { try await $0.measure(list) }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Check that the unit holds the given identity, lock state and calibration.",
            discussion: """
                Reads the unit's factory state (as 'info': nothing is written, the mode is not changed) and compares \
                it with the options. Exit 0 when everything matches; exit 1 when something differs, with one line \
                per mismatch on stdout (or the JSON, whose "ok" is false) and one summary line on stderr.
                Examples:
                  tuneup factory verify --serial TS1-0042 --calibrated -d tcp:127.0.0.1:4100
                  tuneup factory verify --unlocked --bt-name TS1-42 -d tcp:127.0.0.1:4100
                """)
        @Option(help: ArgumentHelp("The serial number the unit must hold.", valueName: "serial"))
        var serial: String?
        @Option(name: .customLong("bt-name"), help: ArgumentHelp("The Bluetooth display name it must hold.", valueName: "name"))
        var btName: String?
        @Option(name: .customLong("bt-address"), help: ArgumentHelp("The Bluetooth address it must hold, AA:BB:CC:DD:EE:FF.", valueName: "address"))
        var btAddress: String?
        @Flag(help: "The unit must be factory-locked.")
        var locked = false
        @Flag(help: "The unit must be unlocked.")
        var unlocked = false
        @Flag(help: "The unit must hold a stored ANC calibration.")
        var calibrated = false
        @OptionGroup var wait: BootloaderCommand.WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if locked && unlocked { throw ValidationError("--locked and --unlocked contradict each other; give one") }
            if try expectation().isEmpty {
                throw ValidationError("give at least one of --serial, --bt-name, --bt-address, --locked, --unlocked, --calibrated")
            }
        }

        func expectation() throws -> FactoryExpectation {
            var e = FactoryExpectation(serialNumber: serial, bluetoothName: btName)
            if let btAddress {
                guard let address = BDAddress(parsing: btAddress) else {
                    throw ValidationError("--bt-address takes six hex bytes separated by colons (AA:BB:CC:DD:EE:FF), got '\(btAddress)'")
                }
                e.bluetoothAddress = address
            }
            if locked { e.locked = true }
            if unlocked { e.locked = false }
            if calibrated { e.calibrated = true }
            return e
        }

        func run() async throws {
            let expectation = try expectation()
            let result = try await withBootloader(device, wait: wait.wait) { try await FactorySteps(client: $0).verify(expectation) }
            try Output.emit(result, json: output.json) { result.text }
            if let summary = result.summary {
                printError(summary)
                throw ExitCode(1)
            }
        }
    }
}
