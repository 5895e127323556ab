import ArgumentParser
import Headset
import LightX
import Terminal
import TuneupKit

/// The factory steps one at a time (issue 9 §2), so a shell script can provision without a recipe. The sequences
/// live in `TuneupKit.FactorySteps`, shared with the station.
struct FactoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "factory",
        abstract: "Factory provisioning steps: read the unit's factory state, write its identity, calibrate, measure, verify, lock, unlock.",
        discussion: """
            For units of a production line (a simulated one: 'tuneup sim headset --blank'); a headset without the \
            factory commands is refused (exit 65), and so is a write to a locked unit. Writes take the device to its \
            bootloader and authenticate, read back what they wrote, and bring it back to its application when it \
            ran it. 'verify' exits 1 when the unit holds something else than its options say.

            Examples (in this order, on a fresh unit; each subcommand's help shows its own):
              tuneup sim headset --blank --listen tcp:127.0.0.1:4100 &   # a fresh unit
              tuneup factory info -d tcp:127.0.0.1:4100
            """,
        subcommands: [Info.self, Identity.self, Calibrate.self, Measure.self, Verify.self, Lock.self, Unlock.self],
        defaultSubcommand: Info.self)

    /// Runs `step` with the factory steps of the device; failures become one stderr line and an exit code.
    static func run<T: Encodable & Sendable>(_ device: DeviceOptions, _ wait: BootloaderCommand.WaitOption, _ output: OutputOptions,
                                             text: (T) -> String, _ step: @escaping (FactorySteps) async throws -> T) async throws {
        let value = try await withBootloader(device, wait: wait.wait) { try await step(FactorySteps(client: $0)) }
        try Output.emit(value, json: output.json) { text(value) }
    }

    struct Info: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show the hardware id, serial number, Bluetooth name and address, calibration and lock.",
            discussion: "Example: tuneup factory info --format json -d tcp:127.0.0.1:4100")
        @OptionGroup var wait: BootloaderCommand.WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await FactoryCommand.run(device, wait, output, text: \FactoryInfo.text) { try await $0.info() }
        }
    }

    struct Identity: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "identity",
            abstract: "Write the serial number, Bluetooth name and/or Bluetooth address; read them back.",
            discussion: """
                Examples:
                  tuneup factory identity --serial TS1-0042 --bt-name TS1-42 -d tcp:127.0.0.1:4100
                  tuneup factory identity --bt-address 02:54:55:00:00:2A -d tcp:127.0.0.1:4100
                """)
        @Option(help: ArgumentHelp("Serial number: 1...31 printable ASCII characters, no spaces.", valueName: "serial"))
        var serial: String?
        @Option(name: .customLong("bt-name"), help: ArgumentHelp("Bluetooth display name: 1...31 UTF-8 bytes.", valueName: "name"))
        var btName: String?
        @Option(name: .customLong("bt-address"), help: ArgumentHelp("Bluetooth address, AA:BB:CC:DD:EE:FF.", valueName: "address"))
        var btAddress: String?
        @OptionGroup var wait: BootloaderCommand.WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws {
            let identity = try identity()
            if identity.isEmpty { throw ValidationError("give at least one of --serial, --bt-name, --bt-address") }
            if let problem = identity.problem { throw ValidationError(problem) }
        }

        func identity() throws -> FactoryIdentity {
            var identity = FactoryIdentity(serialNumber: serial, bluetoothName: btName)
            if let btAddress {
                guard let address = BDAddress(parsing: btAddress) else {
                    throw ValidationError("--bt-address takes six hex bytes separated by colons (AA:BB:CC:DD:EE:FF), got '\(btAddress)'")
                }
                if let problem = address.notADeviceAddress { throw ValidationError("--bt-address: \(problem)") }
                identity.bluetoothAddress = address
            }
            return identity
        }

        func run() async throws {
            let identity = try identity()
            try await FactoryCommand.run(device, wait, output, text: \FactoryInfo.text) { try await $0.writeIdentity(identity) }
        }
    }

    struct Calibrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "calibrate",
            abstract: "Run the ANC calibration measurement; with --store, keep it in flash.",
            discussion: "Example: tuneup factory calibrate --store -d tcp:127.0.0.1:4100")
        @Flag(help: "Store the measured calibration (and verify it was stored).")
        var store = false
        @OptionGroup var wait: BootloaderCommand.WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            let store = self.store
            try await FactoryCommand.run(device, wait, output, text: \CalibrationResult.text) { try await $0.calibrate(store: store) }
        }
    }

    struct Lock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock",
            abstract: "Lock the unit: identity writes, calibration and measurements are refused until an unlock.",
            discussion: """
                Examples:
                  tuneup factory lock -d tcp:127.0.0.1:4100
                  tuneup factory verify --locked -d tcp:127.0.0.1:4100   # prove the lock holds
                """)
        @OptionGroup var wait: BootloaderCommand.WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws {
            try await FactoryCommand.run(device, wait, output, text: \FactoryInfo.text) { try await $0.lock() }
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unlock",
            abstract: "Unlock the unit with the line's factory key.",
            discussion: """
                Authenticates in the bootloader and writes the key (extension 0x6A); a wrong key exits 65.
                Example (the simulator's development key, "TUNEUP-FACTORY-0"):
                  tuneup factory unlock --key 54554e4555502d464143544f52592d30 -d tcp:127.0.0.1:4100
                """)
        @Option(help: ArgumentHelp("The factory key: 32 hex digits.", valueName: "hex"))
        var key: String
        @OptionGroup var wait: BootloaderCommand.WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions

        func validate() throws { _ = try factoryKey() }

        func factoryKey() throws -> FactoryKey {
            guard let key = FactoryKey(hex: key) else { throw ValidationError("--key takes 32 hex digits, got '\(key)'") }
            return key
        }

        func run() async throws {
            let key = try factoryKey()
            try await FactoryCommand.run(device, wait, output, text: \FactoryInfo.text) { try await $0.unlock(key: key) }
        }
    }
}
