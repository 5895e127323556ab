import ArgumentParser
import Logging
import BluetoothTransport
import Terminal
import TuneupKit
import Transport

extension WearableCommand {
    /// `tuneup wearable search`: an LE scan for devices advertising the Wearable service (0xFDD2).
    struct Search: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "search",
            abstract: "Find Bose Wearable devices nearby: an LE scan for the 0xFDD2 service (their ble: addresses).",
            discussion: """
                Runs the kernel's LE discovery on the adapter (--adapter, else TUNEUP_BT_ADAPTER, else the first \
                adapter that is up; without the management interface, a passive HCI scan) for --duration and lists \
                each device advertising the service once: its ble: address (use it as \
                --device), its name and signal strength. Exit 0 when at least one was found, 69 otherwise.
                Examples:
                  tuneup wearable search
                  tuneup wearable search --adapter hci1 --duration 5s --format json
                """)

        @Option(help: ArgumentHelp("The adapter to scan with: hciN or its address.", valueName: "adapter"))
        var adapter: String?

        @Option(parsing: .unconditional, help: ArgumentHelp("How long to scan: 500ms, 3s, 1min or plain seconds (up to 10 min).", valueName: "duration"))
        var duration: String = "3s"

        @Flag(name: .shortAndLong, help: "Log how the scan runs to stderr (the kernel's discovery or HCI scanning).")
        var verbose = false

        @OptionGroup var output: OutputOptions

        struct FoundJSON: Encodable {
            var address: String
            var name: String?
            var rssi: Int
        }

        func scanDuration() throws -> Duration {
            try durationOption(duration, "--duration", upTo: .seconds(600))
        }

        func validate() throws {
            _ = try scanDuration()
            if let adapter { _ = try AdapterSelector(parsing: adapter) }
        }

        func run() async throws {
            LoggingSetup.bootstrap()
            var logger = Logger(label: "tuneup.wearable")
            logger.logLevel = verbose ? .debug : .warning
            let found: [BLEAdvertisement]
            do {
                found = try await BLEScanner.scan(adapter: adapter ?? BluetoothBridge.adapterFromEnvironment(), for: try scanDuration(),
                                                  service: 0xFDD2, logger: logger)
            } catch {
                throw failureExit(error)
            }
            let json = found.map { FoundJSON(address: $0.address.description, name: $0.name, rssi: Int($0.rssi)) }
            if output.json || !json.isEmpty {
                try Output.emit(json, json: output.json) {
                    json.map { "\($0.address)  \($0.name ?? "-")  \($0.rssi) dBm" }.joined(separator: "\n")
                }
            }
            if found.isEmpty {
                throw failureExit(TransportError(.notFound, "no Bose Wearable device advertising (0xFDD2) within \(duration)"))
            }
        }
    }
}
